(* ========================================================================= *)
(*  exitlaw: rounds composed (paper Appendix A.1).                           *)
(*                                                                           *)
(*  Speculative decoding appends one verified block per round.  Round k      *)
(*  starts from the context c emitted so far (after the fixed prompt, which  *)
(*  stays implicit: q s is the target's row after the prompt and s); its     *)
(*  draft tree (N c, par c, tok c), its rows (the target's rows after c,     *)
(*  qc c) and its verifier (randomness A c with law nu c, output ex c, b c)  *)
(*  may all depend on c.  Every round's verifier is exact for its tree and   *)
(*  the target after c (Exactness.exact).                                    *)
(*                                                                           *)
(*  gen k c s: the probability that k rounds started in context c emit a    *)
(*  sequence starting with s (a round that has already emitted past s stops  *)
(*  mattering).  rounds_law: for every k and s with |s| <= k and |s| <= H,   *)
(*  gen k c s = chainf q c s, the target's probability of continuing c with  *)
(*  s: appending exact blocks round after round gives the target's           *)
(*  autoregressive law over the horizon (from c = [::], its law of s).       *)
(*  Every round emits at least one token, so k = |s| rounds suffice.          *)
(* ========================================================================= *)

From mathcomp Require Import all_ssreflect all_algebra.
From ExitLaw Require Import ExitLaw Target Exactness.
Set Implicit Arguments. Unset Strict Implicit. Unset Printing Implicit Defensive.
Import GRing.Theory Num.Theory Order.POrderTheory.
Local Open Scope ring_scope.

Section Rounds.

Variable V : finType.
Variable R : realFieldType.
Variable q : seq V -> V -> R.          (* the target after the prompt *)
Hypothesis q_sum1 : forall s, \sum_(y : V) q s y = 1.
Variable H : nat.                       (* the horizon of each round's exactness *)

(* the target after context c *)
Definition qc (c : seq V) : seq V -> V -> R := fun s => q (c ++ s).

(* round in context c: its tree, its verifier *)
Variable N : seq V -> nat.
Variable par : seq V -> nat -> nat.
Hypothesis par_lt : forall c u, (0 < u < N c)%N -> (par c u < u)%N.
Variable tok : seq V -> nat -> V.
Hypothesis N_le_H : forall c, (N c <= H)%N.
Variable A : seq V -> finType.
Variable nu : forall c, A c -> R.
Variable ex : forall c, A c -> 'I_(N c).
Variable b : forall c, A c -> V.
Hypothesis round_exact : forall c, exact (par c) (tok c) (qc c) H (@nu c) (@ex c) (@b c).

(* the block emitted by the round in context c on outcome u *)
Definition round_block (c : seq V) (u : A c) : seq V := emitted (par c) (tok c) (@ex c) (@b c) u.

(* k rounds from context c: the probability that the emitted sequence starts with s *)
Fixpoint gen (k : nat) (c s : seq V) : R :=
  if k is k'.+1 then
    \sum_(u : A c) @nu c u *
      (let bl := @round_block c u in
       if prefix bl s then gen k' (c ++ bl) (drop (size bl) s) else (prefix s bl)%:R)
  else (s == [::])%:R.

Lemma chainf_qc c pre s : chainf (qc c) pre s = chainf q (c ++ pre) s.
Proof.
elim: s pre => [|y s IH] pre //=.
by rewrite IH /qc rcons_cat.
Qed.

Lemma round_block_size c (u : A c) : (0 < size (@round_block c u))%N.
Proof. by rewrite /round_block /emitted size_rcons. Qed.

Theorem rounds_law k : forall c s, (size s <= k)%N -> (size s <= H)%N ->
  gen k c s = chainf q c s.
Proof.
elim: k => [|k IH] c s hk hH.
  by move: hk; rewrite leqn0 size_eq0 => /eqP ->.
have qc_sum1 : forall s, \sum_(y : V) qc c s y = 1 by move=> s'; apply: q_sum1.
have := exact_prefix_form (par_lt (c:=c)) qc_sum1 (N_le_H c) (round_exact c) hH.
rewrite /chain chainf_qc cats0 => <-; apply: eq_bigr => u _.
rewrite /pcontinue -/(@round_block c u) chainf_qc.
case: ifP => hp //; congr (_ * _); apply: IH.
  rewrite size_drop leq_subLR; apply: leq_trans hk _.
  by rewrite -add1n leq_add2r round_block_size.
by rewrite size_drop; apply: leq_trans (leq_subr _ _) hH.
Qed.

(* from the prompt: the first n tokens of n rounds have the target's law *)
Corollary rounds_autoregressive s : (size s <= H)%N ->
  gen (size s) [::] s = chain q s.
Proof. by move=> hH; rewrite rounds_law. Qed.

End Rounds.
