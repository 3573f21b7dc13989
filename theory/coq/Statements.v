(* Pinned statements of the main theorems of ExitLaw.v, Target.v, Exactness.v,
   Procedures.v, Residual.v and Rounds.v: each `Check (@name : type)` fails to compile if the theorem's
   statement changes (weakened, or given an extra premise such as a section
   Hypothesis).  Generated from `Check @name` and reviewed by hand; see README.md. *)
From mathcomp Require Import all_ssreflect all_algebra.
From ExitLaw Require Import ExitLaw Target Exactness Procedures Residual Rounds.
Import GRing.Theory Num.Theory.
Local Open Scope ring_scope.

Check (@exit_law_is_distribution :
  forall (N : nat) (par : nat -> nat),
  (0 < N)%N ->
  (forall u : nat, (0 < u < N)%N -> (par u < u)%N) ->
  forall (V : finType) (tok : nat -> V) (R : realFieldType) (p : nat -> V -> R),
  (forall (v : nat) (y : V), (v < N)%N -> 0 <= p v y) ->
  (forall v : nat, (v < N)%N -> \sum_y p v y = 1) ->
  (forall u1 u2 : nat,
   (0 < u1 < N)%N -> (0 < u2 < N)%N -> par u1 = par u2 -> tok u1 = tok u2 -> u1 = u2) ->
  (forall v : nat, (v < N)%N -> 0 <= w N par (V:=V) tok (R:=R) p v) /\
  \sum_(v < N) w N par (V:=V) tok (R:=R) p v = 1).

Check (@coverage_identity :
  forall (N : nat) (par : nat -> nat),
  (0 < N)%N ->
  (forall u : nat, (0 < u < N)%N -> (par u < u)%N) ->
  forall (V : finType) (tok : nat -> V) (R : realFieldType) (p : nat -> V -> R),
  Cp N par (V:=V) tok (R:=R) p = \sum_(v < N) (depth par v)%:R * w N par (V:=V) tok (R:=R) p v).

Check (@block_law_is_distribution :
  forall (N : nat) (par : nat -> nat),
  (0 < N)%N ->
  (forall u : nat, (0 < u < N)%N -> (par u < u)%N) ->
  forall (V : finType) (tok : nat -> V) (R : realFieldType) (p : nat -> V -> R),
  (forall (v : nat) (y : V), (v < N)%N -> 0 <= p v y) ->
  (forall v : nat, (v < N)%N -> \sum_y p v y = 1) ->
  (forall u1 u2 : nat,
   (0 < u1 < N)%N -> (0 < u2 < N)%N -> par u1 = par u2 -> tok u1 = tok u2 -> u1 = u2) ->
  (forall (v : nat) (y : V), (v < N)%N -> 0 <= block N par (V:=V) tok (R:=R) p v y) /\
  \sum_(v < N) \sum_y block N par (V:=V) tok (R:=R) p v y = 1).

Check (@block_exit_marginal :
  forall (N : nat) (par : nat -> nat) (V : finType) (tok : nat -> V) 
    (R : realFieldType) (p : nat -> V -> R),
  (forall v : nat, (v < N)%N -> \sum_y p v y = 1) ->
  (forall u1 u2 : nat,
   (0 < u1 < N)%N -> (0 < u2 < N)%N -> par u1 = par u2 -> tok u1 = tok u2 -> u1 = u2) ->
  forall v : nat,
  (v < N)%N -> \sum_y block N par (V:=V) tok (R:=R) p v y = w N par (V:=V) tok (R:=R) p v).

Check (@block_bonus_is_residual :
  forall (N : nat) (par : nat -> nat) (V : finType) (tok : nat -> V) 
    (R : realFieldType) (p : nat -> V -> R),
  (forall (v : nat) (y : V), (v < N)%N -> 0 <= p v y) ->
  (forall v : nat, (v < N)%N -> \sum_y p v y = 1) ->
  (forall u1 u2 : nat,
   (0 < u1 < N)%N -> (0 < u2 < N)%N -> par u1 = par u2 -> tok u1 = tok u2 -> u1 = u2) ->
  forall (v : nat) (y : V),
  (v < N)%N ->
  block N par (V:=V) tok (R:=R) p v y =
  w N par (V:=V) tok (R:=R) p v * resid N par (V:=V) tok (R:=R) p v y).

Check (@residual_is_distribution :
  forall (N : nat) (par : nat -> nat) (V : finType) (tok : nat -> V) 
    (R : realFieldType) (p : nat -> V -> R),
  (forall (v : nat) (y : V), (v < N)%N -> 0 <= p v y) ->
  (forall v : nat, (v < N)%N -> \sum_y p v y = 1) ->
  (forall u1 u2 : nat,
   (0 < u1 < N)%N -> (0 < u2 < N)%N -> par u1 = par u2 -> tok u1 = tok u2 -> u1 = u2) ->
  forall v : nat,
  (v < N)%N ->
  0 < rho N par (V:=V) tok (R:=R) p v ->
  (forall y : V, 0 <= resid N par (V:=V) tok (R:=R) p v y) /\
  \sum_y resid N par (V:=V) tok (R:=R) p v y = 1).

Check (@predraw_kernel_move :
  forall (N : nat) (par : nat -> nat) (V : finType) (tok : nat -> V) 
    (R : realFieldType) (p : nat -> V -> R),
  (forall u1 u2 : nat,
   (0 < u1 < N)%N -> (0 < u2 < N)%N -> par u1 = par u2 -> tok u1 = tok u2 -> u1 = u2) ->
  forall u : nat,
  (0 < u < N)%N -> pd_move N par (V:=V) tok (R:=R) p (par u) u = a par (V:=V) tok (R:=R) p u).

Check (@predraw_kernel_stop :
  forall (N : nat) (par : nat -> nat) (V : finType) (tok : nat -> V) 
    (R : realFieldType) (p : nat -> V -> R) (v : nat) (y : V),
  pd_stop N par (V:=V) tok (R:=R) p v y = pstop N par (V:=V) tok (R:=R) p v y).

Check (@predraw_realises_block :
  forall (N : nat) (par : nat -> nat),
  (forall u : nat, (0 < u < N)%N -> (par u < u)%N) ->
  forall (V : finType) (tok : nat -> V) (R : realFieldType) (p : nat -> V -> R),
  (forall u1 u2 : nat,
   (0 < u1 < N)%N -> (0 < u2 < N)%N -> par u1 = par u2 -> tok u1 = tok u2 -> u1 = u2) ->
  forall (v : nat) (y : V),
  (v < N)%N ->
  walk_law par (V:=V) (R:=R) (pd_move N par (V:=V) tok (R:=R) p)
    (pd_stop N par (V:=V) tok (R:=R) p) v y = block N par (V:=V) tok (R:=R) p v y).

Check (@seqres_kernel :
  forall (N : nat) (par : nat -> nat) (V : finType) (tok : nat -> V) 
    (R : realFieldType) (p : nat -> V -> R),
  (forall (v : nat) (y : V), (v < N)%N -> 0 <= p v y) ->
  (forall v : nat, (v < N)%N -> \sum_y p v y = 1) ->
  (forall u1 u2 : nat,
   (0 < u1 < N)%N -> (0 < u2 < N)%N -> par u1 = par u2 -> tok u1 = tok u2 -> u1 = u2) ->
  forall (v : nat) (l : seq nat),
  (v < N)%N ->
  child_order N par v l ->
  (forall u : nat,
   sr_move (V:=V) tok (R:=R) (p v) l u =
   (if (0 < u < N)%N && (par u == v) then a par (V:=V) tok (R:=R) p u else 0)) /\
  (forall y : V, sr_stop (V:=V) tok (R:=R) (p v) l y = pstop N par (V:=V) tok (R:=R) p v y)).

Check (@seqres_kernel_order_independent :
  forall (N : nat) (par : nat -> nat) (V : finType) (tok : nat -> V) 
    (R : realFieldType) (p : nat -> V -> R),
  (forall (v : nat) (y : V), (v < N)%N -> 0 <= p v y) ->
  (forall v : nat, (v < N)%N -> \sum_y p v y = 1) ->
  (forall u1 u2 : nat,
   (0 < u1 < N)%N -> (0 < u2 < N)%N -> par u1 = par u2 -> tok u1 = tok u2 -> u1 = u2) ->
  forall (v : nat) (l1 l2 : seq nat),
  (v < N)%N ->
  child_order N par v l1 ->
  child_order N par v l2 ->
  (forall u : nat, sr_move (V:=V) tok (R:=R) (p v) l1 u = sr_move (V:=V) tok (R:=R) (p v) l2 u) /\
  (forall y : V, sr_stop (V:=V) tok (R:=R) (p v) l1 y = sr_stop (V:=V) tok (R:=R) (p v) l2 y)).

Check (@seqres_realises_block :
  forall (N : nat) (par : nat -> nat),
  (forall u : nat, (0 < u < N)%N -> (par u < u)%N) ->
  forall (V : finType) (tok : nat -> V) (R : realFieldType) (p : nat -> V -> R),
  (forall (v : nat) (y : V), (v < N)%N -> 0 <= p v y) ->
  (forall v : nat, (v < N)%N -> \sum_y p v y = 1) ->
  (forall u1 u2 : nat,
   (0 < u1 < N)%N -> (0 < u2 < N)%N -> par u1 = par u2 -> tok u1 = tok u2 -> u1 = u2) ->
  forall (order : nat -> seq nat) (v : nat) (y : V),
  (forall v0 : nat, (v0 < N)%N -> child_order N par v0 (order v0)) ->
  (v < N)%N ->
  walk_law par (V:=V) (R:=R)
    (fun v0 : nat => [eta sr_move (V:=V) tok (R:=R) (p v0) (order v0)])
    (fun v0 : nat => [eta sr_stop (V:=V) tok (R:=R) (p v0) (order v0)]) v y =
  block N par (V:=V) tok (R:=R) p v y).

Check (@eagle_step_point_mass :
  forall (V : finType) (R : realFieldType) (r : V -> R) (x : V),
  (forall z : V, 0 <= r z) ->
  \sum_z r z = 1 ->
  eagle_accept (V:=V) (R:=R) r (point_mass (V:=V) R x) x = r x /\
  (forall y : V,
   eagle_residual (V:=V) (R:=R) r (point_mass (V:=V) R x) y = rmask (V:=V) (R:=R) r x y)).

Check (@eagle_seqres_realises_block :
  forall (N : nat) (par : nat -> nat),
  (forall u : nat, (0 < u < N)%N -> (par u < u)%N) ->
  forall (V : finType) (tok : nat -> V) (R : realFieldType) (p : nat -> V -> R),
  (forall (v : nat) (y : V), (v < N)%N -> 0 <= p v y) ->
  (forall v : nat, (v < N)%N -> \sum_y p v y = 1) ->
  (forall u1 u2 : nat,
   (0 < u1 < N)%N -> (0 < u2 < N)%N -> par u1 = par u2 -> tok u1 = tok u2 -> u1 = u2) ->
  forall (order : nat -> seq nat) (v : nat) (y : V),
  (forall v0 : nat, (v0 < N)%N -> child_order N par v0 (order v0)) ->
  (v < N)%N ->
  walk_law par (V:=V) (R:=R)
    (fun v0 : nat => [eta eagle_move (V:=V) tok (R:=R) (p v0) (order v0)])
    (fun v0 : nat => [eta eagle_stop (V:=V) tok (R:=R) (p v0) (order v0)]) v y =
  block N par (V:=V) tok (R:=R) p v y).

Check (@tev_algorithm_realises_block :
  forall (N : nat) (par : nat -> nat),
  (forall u : nat, (0 < u < N)%N -> (par u < u)%N) ->
  forall (V : finType) (tok : nat -> V) (R : realFieldType) (p : nat -> V -> R),
  (forall (v : nat) (y : V), (v < N)%N -> 0 <= p v y) ->
  (forall v : nat, (v < N)%N -> \sum_y p v y = 1) ->
  (forall u1 u2 : nat,
   (0 < u1 < N)%N -> (0 < u2 < N)%N -> par u1 = par u2 -> tok u1 = tok u2 -> u1 = u2) ->
  forall (v : nat) (y : V),
  (v < N)%N -> tev_alg N par (V:=V) tok (R:=R) p v y = block N par (V:=V) tok (R:=R) p v y).

Check (@tev_exit_draw_is_exit_law :
  forall (N : nat) (par : nat -> nat),
  (forall u : nat, (0 < u < N)%N -> (par u < u)%N) ->
  forall (V : finType) (tok : nat -> V) (R : realFieldType) (p : nat -> V -> R) (v : nat),
  (v < N)%N -> wtev N par (V:=V) tok (R:=R) p v = w N par (V:=V) tok (R:=R) p v).

Check (@exit_law_subtree_mass :
  forall (N : nat) (par : nat -> nat),
  (0 < N)%N ->
  (forall u : nat, (0 < u < N)%N -> (par u < u)%N) ->
  forall (V : finType) (tok : nat -> V) (R : realFieldType) (p : nat -> V -> R) (u : nat),
  (u < N)%N ->
  subtree_mass N par (R:=R) (w N par (V:=V) tok (R:=R) p) u = P par (V:=V) tok (R:=R) p u).

Check (@fixed_tree_ceiling :
  forall (N : nat) (par : nat -> nat),
  (forall u : nat, (0 < u < N)%N -> (par u < u)%N) ->
  forall (V : finType) (tok : nat -> V) (R : realFieldType) (p : nat -> V -> R)
    (mu : nat -> R),
  \sum_(v < N) mu v = 1 ->
  (forall u : nat,
   (0 < u < N)%N -> subtree_mass N par (R:=R) mu u <= P par (V:=V) tok (R:=R) p u) ->
  \sum_(v < N) mu v * (1 + (depth par v)%:R) <= 1 + Cp N par (V:=V) tok (R:=R) p).

Check (@fixed_tree_ceiling_equality :
  forall (N : nat) (par : nat -> nat),
  (0 < N)%N ->
  (forall u : nat, (0 < u < N)%N -> (par u < u)%N) ->
  forall (V : finType) (tok : nat -> V) (R : realFieldType) (p : nat -> V -> R)
    (mu : nat -> R),
  \sum_(v < N) mu v = 1 ->
  (forall u : nat,
   (0 < u < N)%N -> subtree_mass N par (R:=R) mu u <= P par (V:=V) tok (R:=R) p u) ->
  \sum_(v < N) mu v * (1 + (depth par v)%:R) = 1 + Cp N par (V:=V) tok (R:=R) p <->
  (forall v : nat, (v < N)%N -> mu v = w N par (V:=V) tok (R:=R) p v)).

Check (@fixed_tree_ceiling_joint :
  forall (N : nat) (par : nat -> nat),
  (forall u : nat, (0 < u < N)%N -> (par u < u)%N) ->
  forall (V : finType) (tok : nat -> V) (R : realFieldType) (p J : nat -> V -> R),
  (forall (v : nat) (y : V), (v < N)%N -> 0 <= J v y) ->
  \sum_(v < N) \sum_y J v y = 1 ->
  (forall (v : nat) (y : V),
   (v < N)%N ->
   J v y +
   \sum_(c < N | isch par v c && (tok c == y))
      subtree_mass N par (R:=R) (exit_marginal (V:=V) (R:=R) J) c <=
   P par (V:=V) tok (R:=R) p v * p v y) ->
  \sum_(v < N) \sum_y J v y * (1 + (depth par v)%:R) <= 1 + Cp N par (V:=V) tok (R:=R) p).

Check (@fixed_tree_ceiling_joint_equality :
  forall (N : nat) (par : nat -> nat),
  (0 < N)%N ->
  (forall u : nat, (0 < u < N)%N -> (par u < u)%N) ->
  forall (V : finType) (tok : nat -> V) (R : realFieldType) (p : nat -> V -> R),
  (forall v : nat, (v < N)%N -> \sum_y p v y = 1) ->
  (forall u1 u2 : nat,
   (0 < u1 < N)%N -> (0 < u2 < N)%N -> par u1 = par u2 -> tok u1 = tok u2 -> u1 = u2) ->
  forall J : nat -> V -> R,
  (forall (v : nat) (y : V), (v < N)%N -> 0 <= J v y) ->
  \sum_(v < N) \sum_y J v y = 1 ->
  (forall (v : nat) (y : V),
   (v < N)%N ->
   J v y +
   \sum_(c < N | isch par v c && (tok c == y))
      subtree_mass N par (R:=R) (exit_marginal (V:=V) (R:=R) J) c <=
   P par (V:=V) tok (R:=R) p v * p v y) ->
  \sum_(v < N) \sum_y J v y * (1 + (depth par v)%:R) = 1 + Cp N par (V:=V) tok (R:=R) p <->
  (forall (v : nat) (y : V), (v < N)%N -> J v y = block N par (V:=V) tok (R:=R) p v y)).

Check (@canonical_space :
  forall (V : finType) (R : realFieldType) (q : seq V -> V -> R),
  (forall (s : seq V) (y : V), 0 <= q s y) ->
  (forall s : seq V, \sum_y q s y = 1) ->
  forall n : nat,
  (forall t : n.-tuple V, 0 <= chain (V:=V) (R:=R) q t) /\
  (\sum_(t : n.-tuple V) chain (V:=V) (R:=R) q t = 1) /\
  (forall s : seq V,
   (size s <= n)%N ->
   \sum_(t : n.-tuple V) chain (V:=V) (R:=R) q t * (prefix (T:=V) s t)%:R =
   chain (V:=V) (R:=R) q s)).

Check (@target_exit_law :
  forall (N : nat) (par : nat -> nat),
  (0 < N)%N ->
  (forall u : nat, (0 < u < N)%N -> (par u < u)%N) ->
  forall (V : finType) (tok : nat -> V),
  (forall u1 u2 : nat,
   (0 < u1 < N)%N -> (0 < u2 < N)%N -> par u1 = par u2 -> tok u1 = tok u2 -> u1 = u2) ->
  forall (R : realFieldType) (q : seq V -> V -> R),
  (forall s : seq V, \sum_y q s y = 1) ->
  forall (Omega : finType) (mu : Omega -> R),
  (forall o : Omega, 0 <= mu o) ->
  \sum_o mu o = 1 ->
  forall H : nat,
  (N <= H)%N ->
  forall Z : Omega -> seq V,
  (forall s : seq V,
   (size s <= H)%N ->
   Pr (R:=R) (Omega:=Omega) mu (fun o : Omega => prefix (T:=V) s (Z o)) =
   chain (V:=V) (R:=R) q s) ->
  forall v : nat,
  (v < N)%N ->
  Pr (R:=R) (Omega:=Omega) mu (fun o : Omega => vstar N par (V:=V) tok (Z o) == v) =
  w N par (V:=V) tok (R:=R) (prow par (V:=V) tok (R:=R) q) v).

Check (@target_block_law :
  forall (N : nat) (par : nat -> nat),
  (0 < N)%N ->
  (forall u : nat, (0 < u < N)%N -> (par u < u)%N) ->
  forall (V : finType) (tok : nat -> V),
  (forall u1 u2 : nat,
   (0 < u1 < N)%N -> (0 < u2 < N)%N -> par u1 = par u2 -> tok u1 = tok u2 -> u1 = u2) ->
  forall (R : realFieldType) (q : seq V -> V -> R),
  (forall s : seq V, \sum_y q s y = 1) ->
  forall (Omega : finType) (mu : Omega -> R),
  (forall o : Omega, 0 <= mu o) ->
  \sum_o mu o = 1 ->
  forall H : nat,
  (N <= H)%N ->
  forall Z : Omega -> seq V,
  (forall s : seq V,
   (size s <= H)%N ->
   Pr (R:=R) (Omega:=Omega) mu (fun o : Omega => prefix (T:=V) s (Z o)) =
   chain (V:=V) (R:=R) q s) ->
  forall (v : nat) (y : V),
  (v < N)%N ->
  Pr (R:=R) (Omega:=Omega) mu
    (fun o : Omega =>
     (vstar N par (V:=V) tok (Z o) == v) && (ystar N par (V:=V) tok (Z o) == Some y)) =
  block N par (V:=V) tok (R:=R) (prow par (V:=V) tok (R:=R) q) v y).

Check (@bounded_ceiling :
  forall (N : nat) (par : nat -> nat),
    (forall u : nat, (0 < u < N)%N -> (par u < u)%N) ->
    forall (V : finType) (tok : nat -> V) (R : realFieldType) (q : seq V -> V -> R)
      (Omega : finType) (mu : Omega -> R),
    (forall o : Omega, 0 <= mu o) ->
    \sum_o mu o = 1 ->
    forall H : nat,
    (N <= H)%N ->
    forall (ex : Omega -> 'I_N) (b : Omega -> V),
    prefix_bound par (V:=V) tok (R:=R) q (Omega:=Omega) mu H ex b ->
    EL par (R:=R) (Omega:=Omega) mu ex <=
    1 + Cp N par (V:=V) tok (R:=R) (prow par (V:=V) tok (R:=R) q)).

Check (@bounded_ceiling_equality :
  forall (N : nat) (par : nat -> nat),
    (0 < N)%N ->
    (forall u : nat, (0 < u < N)%N -> (par u < u)%N) ->
    forall (V : finType) (tok : nat -> V),
    (forall u1 u2 : nat,
     (0 < u1 < N)%N -> (0 < u2 < N)%N -> par u1 = par u2 -> tok u1 = tok u2 -> u1 = u2) ->
    forall (R : realFieldType) (q : seq V -> V -> R),
    (forall s : seq V, \sum_y q s y = 1) ->
    forall (Omega : finType) (mu : Omega -> R),
    (forall o : Omega, 0 <= mu o) ->
    \sum_o mu o = 1 ->
    forall H : nat,
    (N <= H)%N ->
    forall (ex : Omega -> 'I_N) (b : Omega -> V),
    prefix_bound par (V:=V) tok (R:=R) q (Omega:=Omega) mu H ex b ->
    EL par (R:=R) (Omega:=Omega) mu ex =
    1 + Cp N par (V:=V) tok (R:=R) (prow par (V:=V) tok (R:=R) q) <->
    (forall (v : nat) (y : V),
     (v < N)%N ->
     vlaw (V:=V) (R:=R) (Omega:=Omega) mu ex b v y =
     block N par (V:=V) tok (R:=R) (prow par (V:=V) tok (R:=R) q) v y)).

Check (@coupled_ceiling :
  forall (N : nat) (par : nat -> nat),
    (forall u : nat, (0 < u < N)%N -> (par u < u)%N) ->
    forall (V : finType) (tok : nat -> V) (R : realFieldType) (q : seq V -> V -> R)
      (Omega : finType) (mu : Omega -> R),
    (forall o : Omega, 0 <= mu o) ->
    \sum_o mu o = 1 ->
    forall H : nat,
    (N <= H)%N ->
    forall Z : Omega -> seq V,
    (forall s : seq V,
     (size s <= H)%N ->
     Pr (R:=R) (Omega:=Omega) mu (fun o : Omega => prefix (T:=V) s (Z o)) =
     chain (V:=V) (R:=R) q s) ->
    forall (ex : Omega -> 'I_N) (b : Omega -> V),
    prefix_of_Z par (V:=V) tok (R:=R) (Omega:=Omega) mu Z ex b ->
    EL par (R:=R) (Omega:=Omega) mu ex <=
    1 + Cp N par (V:=V) tok (R:=R) (prow par (V:=V) tok (R:=R) q)).

Check (@coupled_ceiling_equality :
  forall (N : nat) (par : nat -> nat),
    (0 < N)%N ->
    (forall u : nat, (0 < u < N)%N -> (par u < u)%N) ->
    forall (V : finType) (tok : nat -> V),
    (forall u1 u2 : nat,
     (0 < u1 < N)%N -> (0 < u2 < N)%N -> par u1 = par u2 -> tok u1 = tok u2 -> u1 = u2) ->
    forall (R : realFieldType) (q : seq V -> V -> R),
    (forall s : seq V, \sum_y q s y = 1) ->
    forall (Omega : finType) (mu : Omega -> R),
    (forall o : Omega, 0 <= mu o) ->
    \sum_o mu o = 1 ->
    forall H : nat,
    (N <= H)%N ->
    forall Z : Omega -> seq V,
    (forall s : seq V,
     (size s <= H)%N ->
     Pr (R:=R) (Omega:=Omega) mu (fun o : Omega => prefix (T:=V) s (Z o)) =
     chain (V:=V) (R:=R) q s) ->
    forall (ex : Omega -> 'I_N) (b : Omega -> V),
    prefix_of_Z par (V:=V) tok (R:=R) (Omega:=Omega) mu Z ex b ->
    EL par (R:=R) (Omega:=Omega) mu ex =
    1 + Cp N par (V:=V) tok (R:=R) (prow par (V:=V) tok (R:=R) q) <->
    (forall (v : nat) (y : V),
     (v < N)%N ->
     vlaw (V:=V) (R:=R) (Omega:=Omega) mu ex b v y =
     block N par (V:=V) tok (R:=R) (prow par (V:=V) tok (R:=R) q) v y)).

Check (@coupled_saturates_iff_target_law :
  forall (N : nat) (par : nat -> nat),
    (0 < N)%N ->
    (forall u : nat, (0 < u < N)%N -> (par u < u)%N) ->
    forall (V : finType) (tok : nat -> V),
    (forall u1 u2 : nat,
     (0 < u1 < N)%N -> (0 < u2 < N)%N -> par u1 = par u2 -> tok u1 = tok u2 -> u1 = u2) ->
    forall (R : realFieldType) (q : seq V -> V -> R),
    (forall s : seq V, \sum_y q s y = 1) ->
    forall (Omega : finType) (mu : Omega -> R),
    (forall o : Omega, 0 <= mu o) ->
    \sum_o mu o = 1 ->
    forall H : nat,
    (N <= H)%N ->
    forall Z : Omega -> seq V,
    (forall s : seq V,
     (size s <= H)%N ->
     Pr (R:=R) (Omega:=Omega) mu (fun o : Omega => prefix (T:=V) s (Z o)) =
     chain (V:=V) (R:=R) q s) ->
    forall (ex : Omega -> 'I_N) (b : Omega -> V),
    prefix_of_Z par (V:=V) tok (R:=R) (Omega:=Omega) mu Z ex b ->
    EL par (R:=R) (Omega:=Omega) mu ex =
    1 + Cp N par (V:=V) tok (R:=R) (prow par (V:=V) tok (R:=R) q) <->
    (forall (v : nat) (y : V),
     (v < N)%N ->
     vlaw (V:=V) (R:=R) (Omega:=Omega) mu ex b v y =
     Pr (R:=R) (Omega:=Omega) mu
       (fun o : Omega =>
        (vstar N par (V:=V) tok (Z o) == v) && (ystar N par (V:=V) tok (Z o) == Some y)))).

Check (@follow_prefix :
  forall (N : nat) (par : nat -> nat) (N_gt0 : (0 < N)%N),
    (forall u : nat, (0 < u < N)%N -> (par u < u)%N) ->
    forall (V : finType) (tok : nat -> V) (R : realFieldType) (Omega : finType)
      (mu : Omega -> R) (H : nat),
    (N <= H)%N ->
    forall Z : Omega -> seq V,
    (forall o : Omega, (H <= size (Z o))%N) ->
    forall y0 : V,
    prefix_of_Z par (V:=V) tok (R:=R) (Omega:=Omega) mu Z
      (fex (N:=N) par N_gt0 (V:=V) tok (Omega:=Omega) Z)
      (fb N par (V:=V) tok (Omega:=Omega) Z y0)).

Check (@follow_law :
  forall (N : nat) (par : nat -> nat) (N_gt0 : (0 < N)%N),
  (forall u : nat, (0 < u < N)%N -> (par u < u)%N) ->
  forall (V : finType) (tok : nat -> V),
  (forall u1 u2 : nat,
   (0 < u1 < N)%N -> (0 < u2 < N)%N -> par u1 = par u2 -> tok u1 = tok u2 -> u1 = u2) ->
  forall (R : realFieldType) (q : seq V -> V -> R),
  (forall s : seq V, \sum_y q s y = 1) ->
  forall (Omega : finType) (mu : Omega -> R),
  (forall o : Omega, 0 <= mu o) ->
  \sum_o mu o = 1 ->
  forall H : nat,
  (N <= H)%N ->
  forall Z : Omega -> seq V,
  (forall s : seq V,
   (size s <= H)%N ->
   Pr (R:=R) (Omega:=Omega) mu (fun o : Omega => prefix (T:=V) s (Z o)) =
   chain (V:=V) (R:=R) q s) ->
  (forall o : Omega, (H <= size (Z o))%N) ->
  forall (y0 : V) (v : nat) (y : V),
  (v < N)%N ->
  vlaw (V:=V) (R:=R) (Omega:=Omega) mu (fex (N:=N) par N_gt0 (V:=V) tok (Omega:=Omega) Z)
    (fb N par (V:=V) tok (Omega:=Omega) Z y0) v y =
  block N par (V:=V) tok (R:=R) (prow par (V:=V) tok (R:=R) q) v y).

Check (@follow_saturates :
  forall (N : nat) (par : nat -> nat) (N_gt0 : (0 < N)%N),
  (forall u : nat, (0 < u < N)%N -> (par u < u)%N) ->
  forall (V : finType) (tok : nat -> V),
  (forall u1 u2 : nat,
   (0 < u1 < N)%N -> (0 < u2 < N)%N -> par u1 = par u2 -> tok u1 = tok u2 -> u1 = u2) ->
  forall (R : realFieldType) (q : seq V -> V -> R),
  (forall s : seq V, \sum_y q s y = 1) ->
  forall (Omega : finType) (mu : Omega -> R),
  (forall o : Omega, 0 <= mu o) ->
  \sum_o mu o = 1 ->
  forall H : nat,
  (N <= H)%N ->
  forall Z : Omega -> seq V,
  (forall s : seq V,
   (size s <= H)%N ->
   Pr (R:=R) (Omega:=Omega) mu (fun o : Omega => prefix (T:=V) s (Z o)) =
   chain (V:=V) (R:=R) q s) ->
  (forall o : Omega, (H <= size (Z o))%N) ->
  V ->
  EL par (R:=R) (Omega:=Omega) mu (fex (N:=N) par N_gt0 (V:=V) tok (Omega:=Omega) Z) =
  1 + Cp N par (V:=V) tok (R:=R) (prow par (V:=V) tok (R:=R) q)).

Check (@root_prefix :
  forall (N : nat) (par : nat -> nat) (N_gt0 : (0 < N)%N) (V : finType) 
      (tok : nat -> V) (R : realFieldType) (Omega : finType) (mu : Omega -> R) 
      (H : nat),
    (N <= H)%N ->
    forall Z : Omega -> seq V,
    (forall o : Omega, (H <= size (Z o))%N) ->
    forall y0 : V,
    prefix_of_Z par (V:=V) tok (R:=R) (Omega:=Omega) mu Z (rex (N:=N) N_gt0 (Omega:=Omega))
      (rb (V:=V) (Omega:=Omega) Z y0)).

Check (@root_length :
  forall (N : nat) (par : nat -> nat) (N_gt0 : (0 < N)%N) (R : realFieldType)
    (Omega : finType) (mu : Omega -> R),
  \sum_o mu o = 1 -> EL par (R:=R) (Omega:=Omega) mu (rex (N:=N) N_gt0 (Omega:=Omega)) = 1).

Check (@tev_coupling :
  forall (N : nat) (par : nat -> nat) (N_gt0 : (0 < N)%N),
    (forall u : nat, (0 < u < N)%N -> (par u < u)%N) ->
    forall (V : finType) (tok : nat -> V),
    (forall u1 u2 : nat,
     (0 < u1 < N)%N -> (0 < u2 < N)%N -> par u1 = par u2 -> tok u1 = tok u2 -> u1 = u2) ->
    forall (R : realFieldType) (q : seq V -> V -> R),
    (forall (s : seq V) (y : V), 0 <= q s y) ->
    (forall s : seq V, \sum_y q s y = 1) ->
    forall (Omega : finType) (mu : Omega -> R),
    (forall o : Omega, 0 <= mu o) ->
    \sum_o mu o = 1 ->
    forall H : nat,
    (N <= H)%N ->
    forall Z : Omega -> seq V,
    (forall s : seq V,
     (size s <= H)%N ->
     Pr (R:=R) (Omega:=Omega) mu (fun o : Omega => prefix (T:=V) s (Z o)) =
     chain (V:=V) (R:=R) q s) ->
    (forall o : Omega, (H <= size (Z o))%N) ->
    forall y0 : V,
    prefix_of_Z par (V:=V) tok (R:=R) (Omega:=Omega) mu Z
      (fex (N:=N) par N_gt0 (V:=V) tok (Omega:=Omega) Z)
      (fb N par (V:=V) tok (Omega:=Omega) Z y0) /\
    (forall (v : nat) (y : V),
     (v < N)%N ->
     vlaw (V:=V) (R:=R) (Omega:=Omega) mu (fex (N:=N) par N_gt0 (V:=V) tok (Omega:=Omega) Z)
       (fb N par (V:=V) tok (Omega:=Omega) Z y0) v y =
     tev_alg N par (V:=V) tok (R:=R) (prow par (V:=V) tok (R:=R) q) v y) /\
    EL par (R:=R) (Omega:=Omega) mu (fex (N:=N) par N_gt0 (V:=V) tok (Omega:=Omega) Z) =
    1 + Cp N par (V:=V) tok (R:=R) (prow par (V:=V) tok (R:=R) q)).

Check (@coupling_exact :
  forall (N : nat) (par : nat -> nat),
    (forall u : nat, (0 < u < N)%N -> (par u < u)%N) ->
    forall (V : finType) (tok : nat -> V) (R : realFieldType) (q : seq V -> V -> R),
    (forall s : seq V, \sum_y q s y = 1) ->
    forall H : nat,
    (N <= H)%N ->
    forall (A : finType) (nu : A -> R),
    \sum_u nu u = 1 ->
    forall (ex : A * H.-tuple V -> 'I_N) (b : A * H.-tuple V -> V),
    coupled par (V:=V) tok (R:=R) q (A:=A) nu ex b ->
    stopping_time par (V:=V) (A:=A) ex ->
    exact par (V:=V) tok (R:=R) q H (A:=prod_finType A (tuple_finType H V))
      (pw (V:=V) (R:=R) q (A:=A) nu) ex b).

Check (@exact_prefix_form :
  forall (N : nat) (par : nat -> nat),
    (forall u : nat, (0 < u < N)%N -> (par u < u)%N) ->
    forall (V : finType) (tok : nat -> V) (R : realFieldType) (q : seq V -> V -> R),
    (forall s : seq V, \sum_y q s y = 1) ->
    forall H : nat,
    (N <= H)%N ->
    forall (A : finType) (nu : A -> R) (ex : A -> 'I_N) (b : A -> V),
    exact par (V:=V) tok (R:=R) q H (A:=A) nu ex b ->
    forall s : seq V,
    (size s <= H)%N ->
    \sum_u nu u * pcontinue (V:=V) (R:=R) q (emitted par (V:=V) tok (Omega:=A) ex b u) s =
    chain (V:=V) (R:=R) q s).

Check (@exact_prefix_bound :
  forall (N : nat) (par : nat -> nat),
    (forall u : nat, (0 < u < N)%N -> (par u < u)%N) ->
    forall (V : finType) (tok : nat -> V) (R : realFieldType) (q : seq V -> V -> R),
    (forall (s : seq V) (y : V), 0 <= q s y) ->
    (forall s : seq V, \sum_y q s y = 1) ->
    forall H : nat,
    (N <= H)%N ->
    forall (A : finType) (nu : A -> R),
    (forall u : A, 0 <= nu u) ->
    forall (ex : A -> 'I_N) (b : A -> V),
    exact par (V:=V) tok (R:=R) q H (A:=A) nu ex b ->
    prefix_bound par (V:=V) tok (R:=R) q (Omega:=A) nu H ex b).

Check (@exact_verifier_ceiling :
  forall (N : nat) (par : nat -> nat),
    (forall u : nat, (0 < u < N)%N -> (par u < u)%N) ->
    forall (V : finType) (tok : nat -> V) (R : realFieldType) (q : seq V -> V -> R),
    (forall (s : seq V) (y : V), 0 <= q s y) ->
    (forall s : seq V, \sum_y q s y = 1) ->
    forall H : nat,
    (N <= H)%N ->
    forall (A : finType) (nu : A -> R),
    (forall u : A, 0 <= nu u) ->
    \sum_u nu u = 1 ->
    forall (ex : A -> 'I_N) (b : A -> V),
    exact par (V:=V) tok (R:=R) q H (A:=A) nu ex b ->
    EL par (R:=R) (Omega:=A) nu ex <=
    1 + Cp N par (V:=V) tok (R:=R) (prow par (V:=V) tok (R:=R) q)).

Check (@exact_verifier_ceiling_equality :
  forall (N : nat) (par : nat -> nat),
    (0 < N)%N ->
    (forall u : nat, (0 < u < N)%N -> (par u < u)%N) ->
    forall (V : finType) (tok : nat -> V),
    (forall u1 u2 : nat,
     (0 < u1 < N)%N -> (0 < u2 < N)%N -> par u1 = par u2 -> tok u1 = tok u2 -> u1 = u2) ->
    forall (R : realFieldType) (q : seq V -> V -> R),
    (forall (s : seq V) (y : V), 0 <= q s y) ->
    (forall s : seq V, \sum_y q s y = 1) ->
    forall H : nat,
    (N <= H)%N ->
    forall (A : finType) (nu : A -> R),
    (forall u : A, 0 <= nu u) ->
    \sum_u nu u = 1 ->
    forall (ex : A -> 'I_N) (b : A -> V),
    exact par (V:=V) tok (R:=R) q H (A:=A) nu ex b ->
    EL par (R:=R) (Omega:=A) nu ex =
    1 + Cp N par (V:=V) tok (R:=R) (prow par (V:=V) tok (R:=R) q) <->
    (forall (v : nat) (y : V),
     (v < N)%N ->
     vlaw (V:=V) (R:=R) (Omega:=A) nu ex b v y =
     block N par (V:=V) tok (R:=R) (prow par (V:=V) tok (R:=R) q) v y)).

Check (@block_law_exact :
  forall (N : nat) (par : nat -> nat),
    (0 < N)%N ->
    (forall u : nat, (0 < u < N)%N -> (par u < u)%N) ->
    forall (V : finType) (tok : nat -> V),
    (forall u1 u2 : nat,
     (0 < u1 < N)%N -> (0 < u2 < N)%N -> par u1 = par u2 -> tok u1 = tok u2 -> u1 = u2) ->
    forall (R : realFieldType) (q : seq V -> V -> R) (H : nat),
    (N <= H)%N ->
    forall (A : finType) (nu : A -> R) (ex : A -> 'I_N) (b : A -> V),
    (forall (v : nat) (y : V),
     (v < N)%N ->
     vlaw (V:=V) (R:=R) (Omega:=A) nu ex b v y =
     block N par (V:=V) tok (R:=R) (prow par (V:=V) tok (R:=R) q) v y) ->
    exact par (V:=V) tok (R:=R) q H (A:=A) nu ex b).

Check (@exact_saturating_iff_block_law :
  forall (N : nat) (par : nat -> nat),
    (0 < N)%N ->
    (forall u : nat, (0 < u < N)%N -> (par u < u)%N) ->
    forall (V : finType) (tok : nat -> V),
    (forall u1 u2 : nat,
     (0 < u1 < N)%N -> (0 < u2 < N)%N -> par u1 = par u2 -> tok u1 = tok u2 -> u1 = u2) ->
    forall (R : realFieldType) (q : seq V -> V -> R),
    (forall (s : seq V) (y : V), 0 <= q s y) ->
    (forall s : seq V, \sum_y q s y = 1) ->
    forall H : nat,
    (N <= H)%N ->
    forall (A : finType) (nu : A -> R),
    (forall u : A, 0 <= nu u) ->
    \sum_u nu u = 1 ->
    forall (ex : A -> 'I_N) (b : A -> V),
    exact par (V:=V) tok (R:=R) q H (A:=A) nu ex b /\
    EL par (R:=R) (Omega:=A) nu ex =
    1 + Cp N par (V:=V) tok (R:=R) (prow par (V:=V) tok (R:=R) q) <->
    (forall (v : nat) (y : V),
     (v < N)%N ->
     vlaw (V:=V) (R:=R) (Omega:=A) nu ex b v y =
     block N par (V:=V) tok (R:=R) (prow par (V:=V) tok (R:=R) q) v y)).

Check (@follow_coupled :
  forall (N : nat) (par : nat -> nat) (N_gt0 : (0 < N)%N),
    (forall u : nat, (0 < u < N)%N -> (par u < u)%N) ->
    forall (V : finType) (tok : nat -> V) (R : realFieldType) (q : seq V -> V -> R) (H : nat),
    (N <= H)%N ->
    forall (A : finType) (nu : A -> R) (y0 : V),
    coupled par (V:=V) tok (R:=R) q (A:=A) nu (follow_ex (N:=N) par N_gt0 (V:=V) tok (A:=A))
      (follow_b N par (V:=V) tok (A:=A) y0)).

Check (@follow_stopping_time :
  forall (N : nat) (par : nat -> nat) (N_gt0 : (0 < N)%N),
    (forall u : nat, (0 < u < N)%N -> (par u < u)%N) ->
    forall (V : finType) (tok : nat -> V) (H : nat) (A : finType),
    stopping_time par (V:=V) (A:=A) (follow_ex (N:=N) par N_gt0 (V:=V) tok (A:=A))).

Check (@follow_exact :
  forall (N : nat) (par : nat -> nat) (N_gt0 : (0 < N)%N),
    (forall u : nat, (0 < u < N)%N -> (par u < u)%N) ->
    forall (V : finType) (tok : nat -> V) (R : realFieldType) (q : seq V -> V -> R),
    (forall s : seq V, \sum_y q s y = 1) ->
    forall H : nat,
    (N <= H)%N ->
    forall (A : finType) (nu : A -> R),
    \sum_u nu u = 1 ->
    forall y0 : V,
    exact par (V:=V) tok (R:=R) q H (A:=prod_finType A (tuple_finType H V))
      (pw (V:=V) (R:=R) q (A:=A) nu) (follow_ex (N:=N) par N_gt0 (V:=V) tok (A:=A))
      (follow_b N par (V:=V) tok (A:=A) y0)).

Check (@follow_saturates_exact :
  forall (N : nat) (par : nat -> nat) (N_gt0 : (0 < N)%N),
    (forall u : nat, (0 < u < N)%N -> (par u < u)%N) ->
    forall (V : finType) (tok : nat -> V),
    (forall u1 u2 : nat,
     (0 < u1 < N)%N -> (0 < u2 < N)%N -> par u1 = par u2 -> tok u1 = tok u2 -> u1 = u2) ->
    forall (R : realFieldType) (q : seq V -> V -> R),
    (forall (s : seq V) (y : V), 0 <= q s y) ->
    (forall s : seq V, \sum_y q s y = 1) ->
    forall H : nat,
    (N <= H)%N ->
    forall (A : finType) (nu : A -> R),
    (forall u : A, 0 <= nu u) ->
    \sum_u nu u = 1 ->
    V ->
    EL par (R:=R) (Omega:=prod_finType A (tuple_finType H V)) (pw (V:=V) (R:=R) q (A:=A) nu)
      (follow_ex (N:=N) par N_gt0 (V:=V) tok (A:=A)) =
    1 + Cp N par (V:=V) tok (R:=R) (prow par (V:=V) tok (R:=R) q)).

Check (@root_exact :
  forall (N : nat) (par : nat -> nat) (N_gt0 : (0 < N)%N),
    (forall u : nat, (0 < u < N)%N -> (par u < u)%N) ->
    forall (V : finType) (tok : nat -> V) (R : realFieldType) (q : seq V -> V -> R),
    (forall s : seq V, \sum_y q s y = 1) ->
    forall H : nat,
    (N <= H)%N ->
    forall (A : finType) (nu : A -> R),
    \sum_u nu u = 1 ->
    forall y0 : V,
    exact par (V:=V) tok (R:=R) q H (A:=prod_finType A (tuple_finType H V))
      (pw (V:=V) (R:=R) q (A:=A) nu) (root_ex (N:=N) N_gt0 (V:=V) (A:=A))
      (root_b (V:=V) (A:=A) y0)).

Check (@walk_law_block :
  forall (N : nat) (par : nat -> nat) (N_gt0 : (0 < N)%N),
    (forall u : nat, (0 < u < N)%N -> (par u < u)%N) ->
    forall (V : finType) (tok : nat -> V) (R : realFieldType) (q : seq V -> V -> R)
      (D : finType) (dw : nat -> D -> R) (step : nat -> D -> option 'I_N)
      (bonus : nat -> D -> V),
    (forall v : nat, (v < N)%N -> \sum_x dw v x = 1) ->
    (forall (v : nat) (x : D) (c : 'I_N), step v x = Some c -> isch par v c) ->
    (forall u : nat,
     (0 < u < N)%N ->
     \sum_x dw (par u) x * (omap val (step (par u) x) == Some u)%:R =
     a par (V:=V) tok (R:=R) (prow par (V:=V) tok (R:=R) q) u) ->
    (forall (v : nat) (y : V),
     (v < N)%N ->
     \sum_x dw v x * ((step v x == None) && (bonus v x == y))%:R =
     pstop N par (V:=V) tok (R:=R) (prow par (V:=V) tok (R:=R) q) v y) ->
    forall (v : nat) (y : V),
    (v < N)%N ->
    vlaw (V:=V) (R:=R) (Omega:=finfun_finType (ordinal_finType N) D) 
      (draws_w (R:=R) (D:=D) dw) (walk_ex N_gt0 (D:=D) step)
      (walk_b N_gt0 (V:=V) (D:=D) step bonus) v y =
    block N par (V:=V) tok (R:=R) (prow par (V:=V) tok (R:=R) q) v y).

Check (@walk_exact :
  forall (N : nat) (par : nat -> nat) (N_gt0 : (0 < N)%N),
    (forall u : nat, (0 < u < N)%N -> (par u < u)%N) ->
    forall (V : finType) (tok : nat -> V),
    (forall u1 u2 : nat,
     (0 < u1 < N)%N -> (0 < u2 < N)%N -> par u1 = par u2 -> tok u1 = tok u2 -> u1 = u2) ->
    forall (R : realFieldType) (q : seq V -> V -> R) (H : nat),
    (N <= H)%N ->
    forall (D : finType) (dw : nat -> D -> R) (step : nat -> D -> option 'I_N)
      (bonus : nat -> D -> V),
    (forall v : nat, (v < N)%N -> \sum_x dw v x = 1) ->
    (forall (v : nat) (x : D) (c : 'I_N), step v x = Some c -> isch par v c) ->
    (forall u : nat,
     (0 < u < N)%N ->
     \sum_x dw (par u) x * (omap val (step (par u) x) == Some u)%:R =
     a par (V:=V) tok (R:=R) (prow par (V:=V) tok (R:=R) q) u) ->
    (forall (v : nat) (y : V),
     (v < N)%N ->
     \sum_x dw v x * ((step v x == None) && (bonus v x == y))%:R =
     pstop N par (V:=V) tok (R:=R) (prow par (V:=V) tok (R:=R) q) v y) ->
    exact par (V:=V) tok (R:=R) q H (A:=finfun_finType (ordinal_finType N) D)
      (draws_w (R:=R) (D:=D) dw) (walk_ex N_gt0 (D:=D) step)
      (walk_b N_gt0 (V:=V) (D:=D) step bonus)).

Check (@walk_saturates :
  forall (N : nat) (par : nat -> nat) (N_gt0 : (0 < N)%N),
    (forall u : nat, (0 < u < N)%N -> (par u < u)%N) ->
    forall (V : finType) (tok : nat -> V),
    (forall u1 u2 : nat,
     (0 < u1 < N)%N -> (0 < u2 < N)%N -> par u1 = par u2 -> tok u1 = tok u2 -> u1 = u2) ->
    forall (R : realFieldType) (q : seq V -> V -> R),
    (forall (s : seq V) (y : V), 0 <= q s y) ->
    (forall s : seq V, \sum_y q s y = 1) ->
    forall (D : finType) (dw : nat -> D -> R) (step : nat -> D -> option 'I_N)
      (bonus : nat -> D -> V),
    (forall (v : nat) (x : D), (v < N)%N -> 0 <= dw v x) ->
    (forall v : nat, (v < N)%N -> \sum_x dw v x = 1) ->
    (forall (v : nat) (x : D) (c : 'I_N), step v x = Some c -> isch par v c) ->
    (forall u : nat,
     (0 < u < N)%N ->
     \sum_x dw (par u) x * (omap val (step (par u) x) == Some u)%:R =
     a par (V:=V) tok (R:=R) (prow par (V:=V) tok (R:=R) q) u) ->
    (forall (v : nat) (y : V),
     (v < N)%N ->
     \sum_x dw v x * ((step v x == None) && (bonus v x == y))%:R =
     pstop N par (V:=V) tok (R:=R) (prow par (V:=V) tok (R:=R) q) v y) ->
    EL par (R:=R) (Omega:=finfun_finType (ordinal_finType N) D) (draws_w (R:=R) (D:=D) dw)
      (walk_ex N_gt0 (D:=D) step) =
    1 + Cp N par (V:=V) tok (R:=R) (prow par (V:=V) tok (R:=R) q)).

Check (@predraw_law :
  forall (N : nat) (par : nat -> nat) (N_gt0 : (0 < N)%N),
    (forall u : nat, (0 < u < N)%N -> (par u < u)%N) ->
    forall (V : finType) (tok : nat -> V),
    (forall u1 u2 : nat,
     (0 < u1 < N)%N -> (0 < u2 < N)%N -> par u1 = par u2 -> tok u1 = tok u2 -> u1 = u2) ->
    forall (R : realFieldType) (q : seq V -> V -> R),
    (forall s : seq V, \sum_y q s y = 1) ->
    forall (v : nat) (y : V),
    (v < N)%N ->
    vlaw (V:=V) (R:=R) (Omega:=finfun_finType (ordinal_finType N) V)
      (draws_w (R:=R) (D:=V) (pd_dw par (V:=V) tok (R:=R) q)) (predraw_ex par N_gt0 (V:=V) tok)
      (predraw_b par N_gt0 (V:=V) tok) v y =
    block N par (V:=V) tok (R:=R) (prow par (V:=V) tok (R:=R) q) v y).

Check (@predraw_exact :
  forall (N : nat) (par : nat -> nat) (N_gt0 : (0 < N)%N),
    (forall u : nat, (0 < u < N)%N -> (par u < u)%N) ->
    forall (V : finType) (tok : nat -> V),
    (forall u1 u2 : nat,
     (0 < u1 < N)%N -> (0 < u2 < N)%N -> par u1 = par u2 -> tok u1 = tok u2 -> u1 = u2) ->
    forall (R : realFieldType) (q : seq V -> V -> R),
    (forall s : seq V, \sum_y q s y = 1) ->
    forall H : nat,
    (N <= H)%N ->
    exact par (V:=V) tok (R:=R) q H (A:=finfun_finType (ordinal_finType N) V)
      (draws_w (R:=R) (D:=V) (pd_dw par (V:=V) tok (R:=R) q)) (predraw_ex par N_gt0 (V:=V) tok)
      (predraw_b par N_gt0 (V:=V) tok)).

Check (@predraw_saturates :
  forall (N : nat) (par : nat -> nat) (N_gt0 : (0 < N)%N),
    (forall u : nat, (0 < u < N)%N -> (par u < u)%N) ->
    forall (V : finType) (tok : nat -> V),
    (forall u1 u2 : nat,
     (0 < u1 < N)%N -> (0 < u2 < N)%N -> par u1 = par u2 -> tok u1 = tok u2 -> u1 = u2) ->
    forall (R : realFieldType) (q : seq V -> V -> R),
    (forall (s : seq V) (y : V), 0 <= q s y) ->
    (forall s : seq V, \sum_y q s y = 1) ->
    EL par (R:=R) (Omega:=finfun_finType (ordinal_finType N) V)
      (draws_w (R:=R) (D:=V) (pd_dw par (V:=V) tok (R:=R) q)) (predraw_ex par N_gt0 (V:=V) tok) =
    1 + Cp N par (V:=V) tok (R:=R) (prow par (V:=V) tok (R:=R) q)).

Check (@tev_law_block :
  forall (N : nat) (par : nat -> nat),
    (forall u : nat, (0 < u < N)%N -> (par u < u)%N) ->
    forall (V : finType) (tok : nat -> V),
    (forall u1 u2 : nat,
     (0 < u1 < N)%N -> (0 < u2 < N)%N -> par u1 = par u2 -> tok u1 = tok u2 -> u1 = u2) ->
    forall (R : realFieldType) (q : seq V -> V -> R),
    (forall (s : seq V) (y : V), 0 <= q s y) ->
    (forall s : seq V, \sum_y q s y = 1) ->
    forall (v : nat) (y : V),
    (v < N)%N ->
    vlaw (V:=V) (R:=R) (Omega:=prod_finType (ordinal_finType N) V)
      (tev_nu par (V:=V) tok (R:=R) q) (tev_ex (V:=V)) (tev_b (V:=V)) v y =
    block N par (V:=V) tok (R:=R) (prow par (V:=V) tok (R:=R) q) v y).

Check (@tev_exact :
  forall (N : nat) (par : nat -> nat),
    (0 < N)%N ->
    (forall u : nat, (0 < u < N)%N -> (par u < u)%N) ->
    forall (V : finType) (tok : nat -> V),
    (forall u1 u2 : nat,
     (0 < u1 < N)%N -> (0 < u2 < N)%N -> par u1 = par u2 -> tok u1 = tok u2 -> u1 = u2) ->
    forall (R : realFieldType) (q : seq V -> V -> R),
    (forall (s : seq V) (y : V), 0 <= q s y) ->
    (forall s : seq V, \sum_y q s y = 1) ->
    forall H : nat,
    (N <= H)%N ->
    exact par (V:=V) tok (R:=R) q H (A:=prod_finType (ordinal_finType N) V)
      (tev_nu par (V:=V) tok (R:=R) q) (tev_ex (V:=V)) (tev_b (V:=V))).

Check (@tev_saturates :
  forall (N : nat) (par : nat -> nat),
    (0 < N)%N ->
    (forall u : nat, (0 < u < N)%N -> (par u < u)%N) ->
    forall (V : finType) (tok : nat -> V),
    (forall u1 u2 : nat,
     (0 < u1 < N)%N -> (0 < u2 < N)%N -> par u1 = par u2 -> tok u1 = tok u2 -> u1 = u2) ->
    forall (R : realFieldType) (q : seq V -> V -> R),
    (forall (s : seq V) (y : V), 0 <= q s y) ->
    (forall s : seq V, \sum_y q s y = 1) ->
    EL par (R:=R) (Omega:=prod_finType (ordinal_finType N) V) (tev_nu par (V:=V) tok (R:=R) q)
      (tev_ex (V:=V)) = 1 + Cp N par (V:=V) tok (R:=R) (prow par (V:=V) tok (R:=R) q)).

Check (@residual_law :
  forall (N : nat) (par : nat -> nat) (N_gt0 : (0 < N)%N),
    (forall u : nat, (0 < u < N)%N -> (par u < u)%N) ->
    forall (V : finType) (tok : nat -> V),
    (forall u1 u2 : nat,
     (0 < u1 < N)%N -> (0 < u2 < N)%N -> par u1 = par u2 -> tok u1 = tok u2 -> u1 = u2) ->
    forall (R : realFieldType) (q : seq V -> V -> R),
    (forall (s : seq V) (y : V), 0 <= q s y) ->
    (forall s : seq V, \sum_y q s y = 1) ->
    forall order : nat -> seq nat,
    (forall v : nat, (v < N)%N -> child_order N par v (order v)) ->
    forall (v : nat) (y : V),
    (v < N)%N ->
    vlaw (V:=V) (R:=R)
      (Omega:=finfun_finType (ordinal_finType N) (prod_finType (tuple_finType N bool_finType) V))
      (draws_w (R:=R) (D:=prod_finType (tuple_finType N bool_finType) V)
         (sr_dw par (V:=V) tok (R:=R) q order)) (residual_ex par N_gt0 (V:=V) order)
      (residual_b par N_gt0 (V:=V) order) v y =
    block N par (V:=V) tok (R:=R) (prow par (V:=V) tok (R:=R) q) v y).

Check (@residual_exact :
  forall (N : nat) (par : nat -> nat) (N_gt0 : (0 < N)%N),
    (forall u : nat, (0 < u < N)%N -> (par u < u)%N) ->
    forall (V : finType) (tok : nat -> V),
    (forall u1 u2 : nat,
     (0 < u1 < N)%N -> (0 < u2 < N)%N -> par u1 = par u2 -> tok u1 = tok u2 -> u1 = u2) ->
    forall (R : realFieldType) (q : seq V -> V -> R),
    (forall (s : seq V) (y : V), 0 <= q s y) ->
    (forall s : seq V, \sum_y q s y = 1) ->
    forall H : nat,
    (N <= H)%N ->
    forall order : nat -> seq nat,
    (forall v : nat, (v < N)%N -> child_order N par v (order v)) ->
    exact par (V:=V) tok (R:=R) q H
      (A:=finfun_finType (ordinal_finType N) (prod_finType (tuple_finType N bool_finType) V))
      (draws_w (R:=R) (D:=prod_finType (tuple_finType N bool_finType) V)
         (sr_dw par (V:=V) tok (R:=R) q order)) (residual_ex par N_gt0 (V:=V) order)
      (residual_b par N_gt0 (V:=V) order)).

Check (@residual_saturates :
  forall (N : nat) (par : nat -> nat) (N_gt0 : (0 < N)%N),
    (forall u : nat, (0 < u < N)%N -> (par u < u)%N) ->
    forall (V : finType) (tok : nat -> V),
    (forall u1 u2 : nat,
     (0 < u1 < N)%N -> (0 < u2 < N)%N -> par u1 = par u2 -> tok u1 = tok u2 -> u1 = u2) ->
    forall (R : realFieldType) (q : seq V -> V -> R),
    (forall (s : seq V) (y : V), 0 <= q s y) ->
    (forall s : seq V, \sum_y q s y = 1) ->
    forall order : nat -> seq nat,
    (forall v : nat, (v < N)%N -> child_order N par v (order v)) ->
    EL par (R:=R)
      (Omega:=finfun_finType (ordinal_finType N) (prod_finType (tuple_finType N bool_finType) V))
      (draws_w (R:=R) (D:=prod_finType (tuple_finType N bool_finType) V)
         (sr_dw par (V:=V) tok (R:=R) q order)) (residual_ex par N_gt0 (V:=V) order) =
    1 + Cp N par (V:=V) tok (R:=R) (prow par (V:=V) tok (R:=R) q)).

Check (@rounds_law :
  forall (V : finType) (R : realFieldType) (q : seq V -> V -> R),
    (forall s : seq V, \sum_y q s y = 1) ->
    forall (H : nat) (N : seq V -> nat) (par : seq V -> nat -> nat),
    (forall (c : seq V) (u : nat), (0 < u < N c)%N -> (par c u < u)%N) ->
    forall tok : seq V -> nat -> V,
    (forall c : seq V, (N c <= H)%N) ->
    forall (A : seq V -> finType) (nu : forall c : seq V, A c -> R)
      (ex : forall c : seq V, A c -> 'I_(N c)) (b : forall c : seq V, A c -> V),
    (forall c : seq V,
     exact (par c) (V:=V) (tok c) (R:=R) (qc (V:=V) (R:=R) q c) H (A:=A c) (nu c) (ex c) (b c)) ->
    forall (k : nat) (c s : seq V),
    (size s <= k)%N ->
    (size s <= H)%N ->
    gen (V:=V) (R:=R) (N:=N) par tok (A:=A) nu ex b k c s = chainf (V:=V) (R:=R) q c s).

Check (@rounds_autoregressive :
  forall (V : finType) (R : realFieldType) (q : seq V -> V -> R),
    (forall s : seq V, \sum_y q s y = 1) ->
    forall (H : nat) (N : seq V -> nat) (par : seq V -> nat -> nat),
    (forall (c : seq V) (u : nat), (0 < u < N c)%N -> (par c u < u)%N) ->
    forall tok : seq V -> nat -> V,
    (forall c : seq V, (N c <= H)%N) ->
    forall (A : seq V -> finType) (nu : forall c : seq V, A c -> R)
      (ex : forall c : seq V, A c -> 'I_(N c)) (b : forall c : seq V, A c -> V),
    (forall c : seq V,
     exact (par c) (V:=V) (tok c) (R:=R) (qc (V:=V) (R:=R) q c) H (A:=A c) (nu c) (ex c) (b c)) ->
    forall s : seq V,
    (size s <= H)%N ->
    gen (V:=V) (R:=R) (N:=N) par tok (A:=A) nu ex b (size s) [::] s = chain (V:=V) (R:=R) q s).
