(* A concrete instance over the rationals: the hypotheses of the theorems in
   ExitLaw.v are satisfiable, and the theorems apply to an actual tree.
   Tree: root 0 with children 1 (token true) and 2 (token false); every row
   is uniform on bool.  Then the root is never the exit (w 0 = 0). *)
From mathcomp Require Import all_ssreflect all_algebra.
From ExitLaw Require Import ExitLaw.
Import GRing.Theory Num.Theory.
Local Open Scope ring_scope.

Definition ex_N : nat := 3.
Definition ex_par (u : nat) : nat := 0.
Definition ex_tok (u : nat) : bool := u == 1%N.
Definition ex_p (v : nat) (y : bool) : rat := 2%:R^-1.

Lemma ex_N_gt0 : (0 < ex_N)%N. Proof. by []. Qed.
Lemma ex_par_lt u : (0 < u < ex_N)%N -> (ex_par u < u)%N.
Proof. by case/andP. Qed.
Lemma ex_p_ge0 v y : (v < ex_N)%N -> 0 <= ex_p v y.
Proof. by []. Qed.
Lemma ex_p_sum1 v : (v < ex_N)%N -> \sum_(y : bool) ex_p v y = 1.
Proof. by rewrite big_bool. Qed.
Lemma ex_sib_distinct u1 u2 : (0 < u1 < ex_N)%N -> (0 < u2 < ex_N)%N ->
  ex_par u1 = ex_par u2 -> ex_tok u1 = ex_tok u2 -> u1 = u2.
Proof. by case: u1 => [|[|[|]]] //; case: u2 => [|[|[|]]]. Qed.

Example ex_exit_law_is_distribution :=
  exit_law_is_distribution ex_N_gt0 ex_par_lt ex_p_ge0 ex_p_sum1 ex_sib_distinct.

Example ex_root_never_exit : w ex_N ex_par ex_tok ex_p 0 = 0.
Proof. by rewrite /w /rho /m big_mkcond /ex_N !big_ord_recr big_ord0 /=. Qed.

Example ex_coverage : Cp ex_N ex_par ex_tok ex_p = 1.
Proof. by rewrite /Cp big_mkcond /ex_N !big_ord_recr big_ord0 /=. Qed.

(* Why Theorem 5 uses point-mass draft rows: with a general draft row q the
   EAGLE acceptance probability of a proposed token x is min(1, p(x)/q(x)),
   which differs from p(x), so conditionally on the realised tree the law is
   not the block law (docs/design.md §1.8: such rules are exact only on average over the
   draft randomness).  Here p = (1/2, 1/2), q(true) = 3/4: accept w.p. 2/3. *)
Example ex_general_draft_row_not_conditionally_exact :
  eagle_accept (fun _ : bool => 2%:R^-1 : rat)
               (fun y : bool => if y then 3%:R / 4%:R else 4%:R^-1) true = 2%:R / 3%:R
  /\ 2%:R / 3%:R != 2%:R^-1 :> rat.
Proof. by split. Qed.

(* ------------------------------------------------------------------------- *)
(* Lemma 1 and Theorem 1 as probability statements (Target.v) on a concrete  *)
(* tree of depth 2 with a branching node, over rat:                          *)
(*     0 --true--> 1 --true--> 3        0 --false--> 2                       *)
(* target: every row uniform on bool (q s y = 1/2 for every prefix s).       *)
(* Probability space: the 4-tuples of tokens weighted by the chain rule      *)
(* (canonical_space), Z = the tuple.  Every hypothesis of the theorems is    *)
(* discharged, so none is vacuous.  Values: P = (1, 1/2, 1/2, 1/4),          *)
(* w = (0, 1/4, 1/2, 1/4), C_p = 5/4.                                        *)
(* ------------------------------------------------------------------------- *)
From ExitLaw Require Import Target.

Definition t_N : nat := 4.
Definition t_par (u : nat) : nat := if u == 3%N then 1%N else 0%N.
Definition t_tok (u : nat) : bool := u != 2%N.
Definition t_q (s : seq bool) (y : bool) : rat := 2%:R^-1.
Definition t_H : nat := 4.
Definition t_mu (t : t_H.-tuple bool) : rat := chain t_q t.
Definition t_Z (t : t_H.-tuple bool) : seq bool := val t.
Notation t_p := (prow t_par t_tok t_q).

Lemma t_N_gt0 : (0 < t_N)%N. Proof. by []. Qed.
Lemma t_par_lt u : (0 < u < t_N)%N -> (t_par u < u)%N.
Proof. by case: u => [|[|[|[|u]]]]. Qed.
Lemma t_sib_distinct u1 u2 : (0 < u1 < t_N)%N -> (0 < u2 < t_N)%N ->
  t_par u1 = t_par u2 -> t_tok u1 = t_tok u2 -> u1 = u2.
Proof. by case: u1 => [|[|[|[|u1]]]] //; case: u2 => [|[|[|[|u2]]]]. Qed.
Lemma t_q_ge0 s y : 0 <= t_q s y. Proof. by []. Qed.
Lemma t_q_sum1 s : \sum_(y : bool) t_q s y = 1. Proof. by rewrite big_bool. Qed.
Lemma t_N_le_H : (t_N <= t_H)%N. Proof. by []. Qed.
Lemma t_mu_ge0 t : 0 <= t_mu t.
Proof. exact: (proj1 (canonical_space t_q_ge0 t_q_sum1 t_H)). Qed.
Lemma t_mu_sum1 : \sum_t t_mu t = 1.
Proof. exact: (proj1 (proj2 (canonical_space t_q_ge0 t_q_sum1 t_H))). Qed.
Lemma t_Z_law s : (size s <= t_H)%N ->
  Pr t_mu (fun o => prefix s (t_Z o)) = chain t_q s.
Proof. exact: (proj2 (proj2 (canonical_space t_q_ge0 t_q_sum1 t_H))). Qed.
Lemma t_Z_size o : (t_H <= size (t_Z o))%N. Proof. by rewrite size_tuple. Qed.

Lemma t_Cp : Cp t_N t_par t_tok t_p = 5%:R / 4%:R.
Proof. by rewrite /Cp big_mkcond /t_N !big_ord_recr big_ord0 /=. Qed.
Lemma t_w : [/\ w t_N t_par t_tok t_p 0 = 0, w t_N t_par t_tok t_p 1 = 4%:R^-1,
               w t_N t_par t_tok t_p 2 = 2%:R^-1 & w t_N t_par t_tok t_p 3 = 4%:R^-1].
Proof. by split; rewrite /w /rho /m big_mkcond /t_N !big_ord_recr big_ord0 /=. Qed.

(* Lemma 1 on this tree: vstar Z has law w, (vstar Z, ystar Z) the block law *)
Definition ex_target_exit_law :=
  target_exit_law t_N_gt0 t_par_lt t_sib_distinct t_q_sum1 t_mu_ge0 t_mu_sum1
                  t_N_le_H t_Z_law.
Definition ex_target_block_law :=
  target_block_law t_N_gt0 t_par_lt t_sib_distinct t_q_sum1 t_mu_ge0 t_mu_sum1
                   t_N_le_H t_Z_law.

(* the verifier that follows Z (exit vstar Z, bonus its next token): its block
   is a prefix of Z, and it saturates: E[L] = 1 + C_p = 9/4 *)
Lemma ex_follow_prefix : prefix_of_Z t_par t_tok t_mu t_Z
  (fex t_par t_N_gt0 t_tok t_Z) (fb t_N t_par t_tok t_Z true).
Proof. exact: (follow_prefix t_N_gt0 t_par_lt t_tok (mu := t_mu) t_N_le_H t_Z_size true). Qed.

Lemma ex_follow_saturates :
  EL t_par t_mu (fex t_par t_N_gt0 t_tok t_Z) = 1 + 5%:R / 4%:R.
Proof.
by rewrite (follow_saturates t_N_gt0 t_par_lt t_sib_distinct t_q_sum1 t_mu_ge0
             t_mu_sum1 t_N_le_H t_Z_law t_Z_size true) t_Cp.
Qed.

(* Theorem 1 applied to the coupled, saturating verifier: the ceiling, and its
   law is the block law *)
Lemma ex_follow_ceiling : EL t_par t_mu (fex t_par t_N_gt0 t_tok t_Z) <= 1 + 5%:R / 4%:R.
Proof.
have := coupled_ceiling t_par_lt t_mu_ge0 t_mu_sum1 t_N_le_H t_Z_law ex_follow_prefix.
by rewrite t_Cp.
Qed.

Lemma ex_follow_block_law v y : (v < t_N)%N ->
  vlaw t_mu (fex t_par t_N_gt0 t_tok t_Z) (fb t_N t_par t_tok t_Z true) v y =
  block t_N t_par t_tok t_p v y.
Proof.
move=> vN.
have := coupled_ceiling_equality t_N_gt0 t_par_lt t_sib_distinct t_q_sum1
          t_mu_ge0 t_mu_sum1 t_N_le_H t_Z_law ex_follow_prefix.
by case=> h _; apply: h => //; rewrite ex_follow_saturates t_Cp.
Qed.

(* a non-saturating coupled verifier: exit at the root, bonus Z_1.
   Theorem 1 applies, and E[L] = 1 < 9/4 = 1 + C_p *)
Lemma ex_root_prefix : prefix_of_Z t_par t_tok t_mu t_Z
  (@rex t_N t_N_gt0 _) (rb t_Z true).
Proof. exact: (root_prefix t_par t_N_gt0 t_tok (mu := t_mu) t_N_le_H t_Z_size true). Qed.

Lemma ex_root_ceiling : EL t_par t_mu (@rex t_N t_N_gt0 _) <= 1 + 5%:R / 4%:R.
Proof.
have := coupled_ceiling t_par_lt t_mu_ge0 t_mu_sum1 t_N_le_H t_Z_law ex_root_prefix.
by rewrite t_Cp.
Qed.

Lemma ex_root_strict : EL t_par t_mu (@rex t_N t_N_gt0 _) = 1 /\ 1 < 1 + 5%:R / 4%:R :> rat.
Proof. by split=> //; exact: (root_length t_par t_N_gt0 t_mu_sum1). Qed.

(* TEV's algorithm on this tree: its law is that of the coupled verifier
   following Z, which saturates (E[L] = 1 + C_p) *)
Definition ex_tev_coupling :=
  @tev_coupling _ _ t_N_gt0 t_par_lt _ _ t_sib_distinct _ _ t_q_ge0 t_q_sum1
                _ _ t_mu_ge0 t_mu_sum1 _ t_N_le_H _ t_Z_law t_Z_size true.

(* ------------------------------------------------------------------------- *)
(* Exactness as the paper defines it (Exactness.v) on this tree: the        *)
(* verifiers following Z and stopping at the root, with no other randomness  *)
(* (U : unit), are exact, and the one following Z saturates.                  *)
(* ------------------------------------------------------------------------- *)
From ExitLaw Require Import Exactness.

Definition u_nu (u : unit) : rat := 1.
Lemma u_nu_ge0 u : 0 <= u_nu u. Proof. by []. Qed.
Lemma u_nu_sum1 : \sum_(u : unit) u_nu u = 1.
Proof. by rewrite (bigD1 tt) //= big_pred0 ?addr0 // => -[]. Qed.

Lemma ex_follow_exact : exact t_par t_tok t_q t_H (pw t_q u_nu)
  (follow_ex t_par t_N_gt0 t_tok (H:=t_H) (A:=unit_finType))
  (follow_b t_N t_par t_tok (H:=t_H) (A:=unit_finType) true).
Proof. exact: (follow_exact t_N_gt0 t_par_lt t_tok t_q_sum1 t_N_le_H u_nu_sum1 true). Qed.

Lemma ex_follow_exact_saturates :
  EL t_par (pw t_q u_nu) (follow_ex t_par t_N_gt0 t_tok (H:=t_H) (A:=unit_finType)) =
  1 + 5%:R / 4%:R.
Proof.
by rewrite (follow_saturates_exact t_N_gt0 t_par_lt t_sib_distinct t_q_ge0 t_q_sum1
             t_N_le_H u_nu_ge0 u_nu_sum1 true) t_Cp.
Qed.

Lemma ex_root_exact : exact t_par t_tok t_q t_H (pw t_q u_nu)
  (root_ex t_N_gt0 (V:=bool_finType) (H:=t_H) (A:=unit_finType))
  (root_b (H:=t_H) (A:=unit_finType) true).
Proof. exact: (root_exact t_N_gt0 t_par_lt t_tok t_q_sum1 t_N_le_H u_nu_sum1 true). Qed.

(* the procedures on this tree (Procedures.v): predraw-and-follow on independent
   per-node draws R_v ~ p_v, and TEV's two draws, are exact and saturate *)
From ExitLaw Require Import Procedures.

Definition ex_predraw_exact :=
  predraw_exact t_N_gt0 t_par_lt t_sib_distinct t_q_sum1 t_N_le_H.
Definition ex_predraw_saturates :=
  predraw_saturates t_N_gt0 t_par_lt t_sib_distinct t_q_ge0 t_q_sum1.
Definition ex_tev_exact := tev_exact t_N_gt0 t_par_lt t_sib_distinct t_q_ge0 t_q_sum1 t_N_le_H.
Definition ex_tev_saturates :=
  tev_saturates t_N_gt0 t_par_lt t_sib_distinct t_q_ge0 t_q_sum1.

(* sequential residual on independent draws (Residual.v), children tested in
   increasing order *)
From ExitLaw Require Import Residual.
Definition t_order (v : nat) : seq nat := [seq u <- iota 1 3 | t_par u == v].
Lemma t_order_ok v : (v < t_N)%N -> child_order t_N t_par v (t_order v).
Proof.
move=> _; split; first by rewrite filter_uniq // iota_uniq.
by move=> u; rewrite mem_filter mem_iota andbC.
Qed.
Definition ex_residual_exact :=
  residual_exact t_N_gt0 t_par_lt t_sib_distinct t_q_ge0 t_q_sum1 t_N_le_H t_order_ok.
Definition ex_residual_saturates :=
  residual_saturates t_N_gt0 t_par_lt t_sib_distinct t_q_ge0 t_q_sum1 t_order_ok.

(* rounds composed (Rounds.v): on this tree at every round, with TEV's two draws
   from the target's rows after the context emitted so far, the emitted sequence
   has the target's law over the horizon *)
From ExitLaw Require Import Rounds.

Definition ex_rounds_law :=
  @rounds_law _ _ t_q t_q_sum1 t_H (fun _ => t_N) (fun _ => t_par) (fun _ => t_par_lt)
    (fun _ => t_tok) (fun _ => t_N_le_H) _ _ _ _
    (fun c => tev_exact t_N_gt0 t_par_lt t_sib_distinct (q := qc t_q c)
                (fun _ _ => t_q_ge0 _ _) (fun _ => t_q_sum1 _) t_N_le_H).

(* ------------------------------------------------------------------------- *)
(* The anticipating verifier: the stopping-time condition has content.       *)
(* Tree 0 --true--> 1, uniform rows, horizon 2.  The verifier reads Z (its   *)
(* randomness is (U, Z) with U : unit): exit at node 1 (block Z_1 Z_2) iff   *)
(* Z = (true, true), else exit at the root with bonus Z_1 (block Z_1).  Its  *)
(* block is always a prefix of Z (coupled), but whether it stops after one   *)
(* token depends on Z_2 (not a stopping time), and it is not exact: its      *)
(* block followed by the target's continuation is (true, true) with          *)
(* probability 3/8, not 1/4.                                                 *)
(* ------------------------------------------------------------------------- *)
Definition a_N : nat := 2.
Definition a_par (u : nat) : nat := 0.
Definition a_tok (u : nat) : bool := true.
Definition a_H : nat := 2.
Lemma a_N_gt0 : (0 < a_N)%N. Proof. by []. Qed.
Definition a_TT (o : unit * a_H.-tuple bool) : bool := val o.2 == [:: true; true].
Definition ant_ex (o : unit * a_H.-tuple bool) : 'I_a_N :=
  if a_TT o then Ordinal (isT : (1 < a_N)%N) else Ordinal a_N_gt0.
Definition ant_b (o : unit * a_H.-tuple bool) : bool :=
  if a_TT o then nth true o.2 1 else nth true o.2 0.

Lemma sum_unit_tuple2 (R : realFieldType) (F : unit * 2.-tuple bool -> R) :
  \sum_o F o = \sum_(x : bool) \sum_(y : bool) F (tt, [tuple x; y]).
Proof.
rewrite (eq_bigr (fun o => F (o.1, o.2))); last by case.
rewrite -(pair_bigA _ (fun u z => F (u, z))) /= (bigD1 tt) //= [X in _ + X]big_pred0 // addr0.
rewrite sum_tuple_cons; apply: eq_bigr => x _.
rewrite sum_tuple_cons; apply: eq_bigr => y _.
rewrite sum_tuple0; congr F; congr pair; exact: val_inj.
Qed.

Lemma ex_anticipating_coupled : coupled a_par a_tok t_q u_nu ant_ex ant_b.
Proof.
move=> [] z _; case: z => -[|x [|y [|]]] //= hz.
by case: x; case: y.
Qed.

Lemma ex_anticipating_not_stopping_time : ~ stopping_time a_par ant_ex.
Proof.
move=> h; have := h tt 1%N [tuple true; true] [tuple true; false] erefl.
by [].
Qed.

Lemma ex_anticipating_completed :
  completed a_par a_tok t_q (pw t_q u_nu) ant_ex ant_b [:: true; true] = 3%:R / 8%:R /\
  chain t_q [:: true; true] = 4%:R^-1.
Proof.
split=> //; rewrite /completed sum_unit_tuple2 !big_bool.
by rewrite /pw /continue /emitted /= /ant_ex /ant_b /a_TT /=.
Qed.

Lemma ex_anticipating_not_exact :
  ~ exact a_par a_tok t_q a_H (pw t_q u_nu) ant_ex ant_b.
Proof.
move=> h; have := h [tuple true; true]; rewrite (proj1 ex_anticipating_completed).
by [].
Qed.

(* The sampled-draft remark (paper A.5).  A sampled chain verifier: draft one
   token x ~ q, accept it w.p. min(1, p(x)/q(x)); on rejection the next token
   is drawn from norm((p - q)+) (s_first x y: law of the first emitted token
   given the draft x).  Here p = (1/2, 1/2) at every prefix, q(true) = 1/4.
   On average over the draft it is exact (ex_sampled_exact_on_average: the
   first token has law p).  Conditionally on the realised draft x = true
   (realised tree T: the chain root -true-> 1, C_p(T) = 1/2) it accepts with
   probability 1, so E[L | T] = 2 > 3/2 = 1 + C_p(T), and its first token is
   never false although p(false) = 1/2: it is not exact on T
   (ex_sampled_conditionally_exceeds).  Theorem 1 is about verifiers that are
   exact conditionally on the realised tree. *)
Definition s_p (y : bool) : rat := 2%:R^-1.
Definition s_q (y : bool) : rat := if y then 4%:R^-1 else 3%:R / 4%:R.
Lemma s_acc_true : eagle_accept s_p s_q true = 1. Proof. by []. Qed.
Lemma s_acc_false : eagle_accept s_p s_q false = 2%:R / 3%:R. Proof. by []. Qed.
Lemma s_res_sum : \sum_(z : bool) Num.max 0 (s_p z - s_q z) = 4%:R^-1.
Proof. by rewrite big_bool. Qed.
Lemma s_res_true : eagle_residual s_p s_q true = 1.
Proof. by rewrite /eagle_residual s_res_sum. Qed.
Lemma s_res_false : eagle_residual s_p s_q false = 0.
Proof. by rewrite /eagle_residual s_res_sum. Qed.
Definition s_first (x y : bool) : rat :=
  eagle_accept s_p s_q x * (x == y)%:R +
  (1 - eagle_accept s_p s_q x) * eagle_residual s_p s_q y.
Lemma ex_sampled_exact_on_average y : \sum_(x : bool) s_q x * s_first x y = s_p y.
Proof.
rewrite big_bool /s_first s_acc_true s_acc_false.
by case: y; rewrite ?s_res_true ?s_res_false.
Qed.
Definition s_N : nat := 2.
Definition s_par (u : nat) : nat := 0.
Definition s_tok (u : nat) : bool := true.
Lemma s_Cp : Cp s_N s_par s_tok (fun _ => s_p) = 2%:R^-1.
Proof. by rewrite /Cp big_mkcond /s_N !big_ord_recr big_ord0 /=. Qed.
Lemma ex_sampled_conditionally_exceeds :
  1 + Cp s_N s_par s_tok (fun _ => s_p) < 1 + eagle_accept s_p s_q true /\
  s_first true false = 0 /\ s_p false = 2%:R^-1.
Proof. by rewrite s_Cp /s_first s_acc_true s_res_false. Qed.
