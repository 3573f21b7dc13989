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
