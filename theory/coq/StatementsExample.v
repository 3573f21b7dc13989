(* Pinned statements of the concrete instances in Example.v (see Statements.v). *)
From mathcomp Require Import all_ssreflect all_algebra.
From ExitLaw Require Import ExitLaw Target Exactness Procedures Residual Rounds Example.
Import GRing.Theory Num.Theory.
Local Open Scope ring_scope.

Check (@ex_exit_law_is_distribution :
  (forall v : nat,
   (v < ex_N)%N -> 0 <= w ex_N ex_par (V:=bool_finType) ex_tok (R:=rat_realFieldType) ex_p v) /\
  \sum_(v < ex_N) w ex_N ex_par (V:=bool_finType) ex_tok (R:=rat_realFieldType) ex_p v = 1).

Check (@ex_target_exit_law :
  forall v : nat,
  (v < t_N)%N ->
  Pr (R:=rat_realFieldType) (Omega:=tuple_finType t_H bool_finType) t_mu
    (fun o : tuple_finType t_H bool_finType =>
     vstar t_N t_par (V:=bool_finType) t_tok (t_Z o) == v) =
  w t_N t_par (V:=bool_finType) t_tok (R:=rat_realFieldType) t_p v).

Check (@ex_target_block_law :
  forall (v : nat) (y : bool_finType),
  (v < t_N)%N ->
  Pr (R:=rat_realFieldType) (Omega:=tuple_finType t_H bool_finType) t_mu
    (fun o : tuple_finType t_H bool_finType =>
     (vstar t_N t_par (V:=bool_finType) t_tok (t_Z o) == v) &&
     (ystar t_N t_par (V:=bool_finType) t_tok (t_Z o) == Some y)) =
  block t_N t_par (V:=bool_finType) t_tok (R:=rat_realFieldType) t_p v y).

Check (@ex_follow_prefix :
  prefix_of_Z t_par (V:=bool_finType) t_tok (R:=rat_realFieldType)
      (Omega:=tuple_finType t_H bool_finType) t_mu t_Z
      (fex (N:=t_N) t_par t_N_gt0 (V:=bool_finType) t_tok
         (Omega:=tuple_finType t_H bool_finType) t_Z)
      (fb t_N t_par (V:=bool_finType) t_tok (Omega:=tuple_finType t_H bool_finType) t_Z true)).

Check (@ex_follow_saturates :
  EL t_par (R:=rat_realFieldType) (Omega:=tuple_finType t_H bool_finType) t_mu
  (fex (N:=t_N) t_par t_N_gt0 (V:=bool_finType) t_tok
     (Omega:=tuple_finType t_H bool_finType) t_Z) = 1 + 5 / 4).

Check (@ex_follow_ceiling :
  EL t_par (R:=rat_realFieldType) (Omega:=tuple_finType t_H bool_finType) t_mu
  (fex (N:=t_N) t_par t_N_gt0 (V:=bool_finType) t_tok
     (Omega:=tuple_finType t_H bool_finType) t_Z) <= 1 + 5 / 4).

Check (@ex_follow_block_law :
  forall (v : nat) (y : bool_finType),
  (v < t_N)%N ->
  vlaw (V:=bool_finType) (R:=rat_realFieldType) (Omega:=tuple_finType t_H bool_finType) t_mu
    (fex (N:=t_N) t_par t_N_gt0 (V:=bool_finType) t_tok
       (Omega:=tuple_finType t_H bool_finType) t_Z)
    (fb t_N t_par (V:=bool_finType) t_tok (Omega:=tuple_finType t_H bool_finType) t_Z true) v
    y = block t_N t_par (V:=bool_finType) t_tok (R:=rat_realFieldType) t_p v y).

Check (@ex_root_prefix :
  prefix_of_Z t_par (V:=bool_finType) t_tok (R:=rat_realFieldType)
      (Omega:=tuple_finType t_H bool_finType) t_mu t_Z
      (rex (N:=t_N) t_N_gt0 (Omega:=tuple_finType t_H bool_finType))
      (rb (V:=bool_finType) (Omega:=tuple_finType t_H bool_finType) t_Z true)).

Check (@ex_root_ceiling :
  EL t_par (R:=rat_realFieldType) (Omega:=tuple_finType t_H bool_finType) t_mu
    (rex (N:=t_N) t_N_gt0 (Omega:=tuple_finType t_H bool_finType)) <= 
  1 + 5 / 4).

Check (@ex_root_strict :
  EL t_par (R:=rat_realFieldType) (Omega:=tuple_finType t_H bool_finType) t_mu
    (rex (N:=t_N) t_N_gt0 (Omega:=tuple_finType t_H bool_finType)) = 1 /\ 
  1 < 1 + 5 / 4).

Check (@ex_tev_coupling :
  prefix_of_Z t_par (V:=bool_finType) t_tok (R:=rat_realFieldType)
      (Omega:=tuple_finType t_H bool_finType) t_mu t_Z
      (fex (N:=t_N) t_par t_N_gt0 (V:=bool_finType) t_tok
         (Omega:=tuple_finType t_H bool_finType) t_Z)
      (fb t_N t_par (V:=bool_finType) t_tok (Omega:=tuple_finType t_H bool_finType) t_Z true) /\
    (forall (v : nat) (y : bool_finType),
     (v < t_N)%N ->
     vlaw (V:=bool_finType) (R:=rat_realFieldType) (Omega:=tuple_finType t_H bool_finType) t_mu
       (fex (N:=t_N) t_par t_N_gt0 (V:=bool_finType) t_tok
          (Omega:=tuple_finType t_H bool_finType) t_Z)
       (fb t_N t_par (V:=bool_finType) t_tok (Omega:=tuple_finType t_H bool_finType) t_Z true) v
       y = tev_alg t_N t_par (V:=bool_finType) t_tok (R:=rat_realFieldType) t_p v y) /\
    EL t_par (R:=rat_realFieldType) (Omega:=tuple_finType t_H bool_finType) t_mu
      (fex (N:=t_N) t_par t_N_gt0 (V:=bool_finType) t_tok
         (Omega:=tuple_finType t_H bool_finType) t_Z) =
    1 + Cp t_N t_par (V:=bool_finType) t_tok (R:=rat_realFieldType) t_p).

Check (@ex_follow_exact :
  exact t_par (V:=bool_finType) t_tok (R:=rat_realFieldType) t_q t_H
      (A:=prod_finType unit_finType (tuple_finType t_H bool_finType))
      (pw (V:=bool_finType) (R:=rat_realFieldType) t_q (A:=unit_finType) u_nu)
      (follow_ex (N:=t_N) t_par t_N_gt0 (V:=bool_finType) t_tok (A:=unit_finType))
      (follow_b t_N t_par (V:=bool_finType) t_tok (A:=unit_finType) true)).

Check (@ex_follow_exact_saturates :
  EL t_par (R:=rat_realFieldType)
      (Omega:=prod_finType unit_finType (tuple_finType t_H bool_finType))
      (pw (V:=bool_finType) (R:=rat_realFieldType) t_q (A:=unit_finType) u_nu)
      (follow_ex (N:=t_N) t_par t_N_gt0 (V:=bool_finType) t_tok (A:=unit_finType)) = 
    1 + 5 / 4).

Check (@ex_root_exact :
  exact t_par (V:=bool_finType) t_tok (R:=rat_realFieldType) t_q t_H
      (A:=prod_finType unit_finType (tuple_finType t_H bool_finType))
      (pw (V:=bool_finType) (R:=rat_realFieldType) t_q (A:=unit_finType) u_nu)
      (root_ex (N:=t_N) t_N_gt0 (V:=bool_finType) (A:=unit_finType))
      (root_b (V:=bool_finType) (A:=unit_finType) true)).

Check (@ex_predraw_exact :
  exact t_par (V:=bool_finType) t_tok (R:=rat_realFieldType) t_q t_H
      (A:=finfun_finType (ordinal_finType t_N) bool_finType)
      (draws_w (R:=rat_realFieldType) (D:=bool_finType)
         (pd_dw t_par (V:=bool_finType) t_tok (R:=rat_realFieldType) t_q))
      (predraw_ex t_par t_N_gt0 (V:=bool_finType) t_tok)
      (predraw_b t_par t_N_gt0 (V:=bool_finType) t_tok)).

Check (@ex_predraw_saturates :
  EL t_par (R:=rat_realFieldType) (Omega:=finfun_finType (ordinal_finType t_N) bool_finType)
      (draws_w (R:=rat_realFieldType) (D:=bool_finType)
         (pd_dw t_par (V:=bool_finType) t_tok (R:=rat_realFieldType) t_q))
      (predraw_ex t_par t_N_gt0 (V:=bool_finType) t_tok) =
    1 + Cp t_N t_par (V:=bool_finType) t_tok (R:=rat_realFieldType) t_p).

Check (@ex_tev_exact :
  exact t_par (V:=bool_finType) t_tok (R:=rat_realFieldType) t_q t_H
      (A:=prod_finType (ordinal_finType t_N) bool_finType)
      (tev_nu t_par (V:=bool_finType) t_tok (R:=rat_realFieldType) t_q)
      (tev_ex (V:=bool_finType)) (tev_b (V:=bool_finType))).

Check (@ex_tev_saturates :
  EL t_par (R:=rat_realFieldType) (Omega:=prod_finType (ordinal_finType t_N) bool_finType)
      (tev_nu t_par (V:=bool_finType) t_tok (R:=rat_realFieldType) t_q)
      (tev_ex (V:=bool_finType)) =
    1 + Cp t_N t_par (V:=bool_finType) t_tok (R:=rat_realFieldType) t_p).

Check (@ex_residual_exact :
  exact t_par (V:=bool_finType) t_tok (R:=rat_realFieldType) t_q t_H
      (A:=finfun_finType (ordinal_finType t_N)
            (prod_finType (tuple_finType t_N bool_finType) bool_finType))
      (draws_w (R:=rat_realFieldType)
         (D:=prod_finType (tuple_finType t_N bool_finType) bool_finType)
         (sr_dw t_par (V:=bool_finType) t_tok (R:=rat_realFieldType) t_q t_order))
      (residual_ex t_par t_N_gt0 (V:=bool_finType) t_order)
      (residual_b t_par t_N_gt0 (V:=bool_finType) t_order)).

Check (@ex_residual_saturates :
  EL t_par (R:=rat_realFieldType)
      (Omega:=finfun_finType (ordinal_finType t_N)
                (prod_finType (tuple_finType t_N bool_finType) bool_finType))
      (draws_w (R:=rat_realFieldType)
         (D:=prod_finType (tuple_finType t_N bool_finType) bool_finType)
         (sr_dw t_par (V:=bool_finType) t_tok (R:=rat_realFieldType) t_q t_order))
      (residual_ex t_par t_N_gt0 (V:=bool_finType) t_order) =
    1 + Cp t_N t_par (V:=bool_finType) t_tok (R:=rat_realFieldType) t_p).

Check (@ex_rounds_law :
  forall (k : nat) (c s : seq bool_finType),
    (size s <= k)%N ->
    (size s <= t_H)%N ->
    gen (V:=bool_finType) (R:=rat_realFieldType) (N:=fun=> t_N) (fun=> t_par) 
      (fun=> t_tok) (A:=fun=> prod_finType (ordinal_finType t_N) bool_finType)
      (fun c0 : seq bool_finType =>
       tev_nu t_par (V:=bool_finType) t_tok (R:=rat_realFieldType)
         (qc (V:=bool_finType) (R:=rat_realFieldType) t_q c0)) (fun=> tev_ex (V:=bool_finType))
      (fun=> tev_b (V:=bool_finType)) k c s =
    chainf (V:=bool_finType) (R:=rat_realFieldType) t_q c s).

Check (@ex_anticipating_coupled :
  coupled a_par (V:=bool_finType) a_tok (R:=rat_realFieldType) t_q (A:=unit_finType) u_nu
      ant_ex ant_b).

Check (@ex_anticipating_not_stopping_time :
  ~ stopping_time a_par (V:=bool_finType) (A:=unit_finType) ant_ex).

Check (@ex_anticipating_completed :
  completed a_par (V:=bool_finType) a_tok (R:=rat_realFieldType) t_q
      (A:=prod_finType unit_finType (tuple_finType a_H bool_finType))
      (pw (V:=bool_finType) (R:=rat_realFieldType) t_q (A:=unit_finType) u_nu) ant_ex ant_b
      [:: true; true] = 3 / 8 /\
    chain (V:=bool_finType) (R:=rat_realFieldType) t_q [:: true; true] = 4^-1).

Check (@ex_anticipating_not_exact :
  ~
    exact a_par (V:=bool_finType) a_tok (R:=rat_realFieldType) t_q a_H
      (A:=prod_finType unit_finType (tuple_finType a_H bool_finType))
      (pw (V:=bool_finType) (R:=rat_realFieldType) t_q (A:=unit_finType) u_nu) ant_ex ant_b).

Check (@ex_sampled_exact_on_average :
  forall y : bool, \sum_x s_q x * s_first x y = s_p y).

Check (@ex_sampled_conditionally_exceeds :
  1 + Cp s_N s_par (V:=bool_finType) s_tok (R:=rat_realFieldType) (fun=> s_p) <
  1 + eagle_accept (V:=bool_finType) (R:=rat_realFieldType) s_p s_q true /\
  s_first true false = 0 /\ s_p false = 2^-1).
