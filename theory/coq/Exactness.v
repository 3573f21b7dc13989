(* ========================================================================= *)
(*  exitlaw: exactness as the paper defines it (docs/design.md §1.3).        *)
(*                                                                           *)
(*  A verifier on the fixed tree is a function of the tree's rows (fixed     *)
(*  parameters here) and of its own randomness U, a finite probability       *)
(*  space (A, nu); its output is an exit node ex u and a bonus token b u,    *)
(*  its block path(ex u) ++ [b u].  The target's continuation is not an      *)
(*  argument: U is independent of it by construction.                       *)
(*                                                                           *)
(*  exact: the block followed by the target's continuation has the target's *)
(*  law ("completed-block law"): for every H-token sequence s (H >= N, so   *)
(*  every block fits),                                                       *)
(*     sum_u nu u [block u is a prefix of s] chain(s after block u | block u) *)
(*       = chain(s).                                                         *)
(*                                                                           *)
(*  The coupling form.  A coupled verifier reads U and a target continuation *)
(*  Z (drawn independently: the product space (A x H-tuples, nu x chain));   *)
(*  coupled: its block is a prefix of Z; stopping_time: whether its length  *)
(*  is <= t depends only on U and Z's first t tokens.  coupling_exact: the   *)
(*  two together imply exactness (as a verifier whose randomness is (U, Z)). *)
(*  Example.v shows a coupled verifier without the stopping-time condition   *)
(*  that is not exact.                                                       *)
(*                                                                           *)
(*  exact_prefix_bound: exactness gives the per-prefix bound of Target.v, so *)
(*  Theorem 1 holds for exact verifiers (exact_verifier_ceiling, _equality); *)
(*  block_law_exact: every verifier whose (exit, bonus) law is the block law *)
(*  is exact, so exact and saturating <-> block law.                          *)
(* ========================================================================= *)

From mathcomp Require Import all_ssreflect all_algebra.
From ExitLaw Require Import ExitLaw Target.
Set Implicit Arguments. Unset Strict Implicit. Unset Printing Implicit Defensive.
Import GRing.Theory Num.Theory Order.POrderTheory.
Local Open Scope ring_scope.

Section Exactness.

Variable N : nat.
Variable par : nat -> nat.
Hypothesis N_gt0 : (0 < N)%N.
Hypothesis par_lt : forall u, (0 < u < N)%N -> (par u < u)%N.
Variable V : finType.
Variable tok : nat -> V.
Hypothesis sib_distinct : forall u1 u2, (0 < u1 < N)%N -> (0 < u2 < N)%N ->
  par u1 = par u2 -> tok u1 = tok u2 -> u1 = u2.
Variable R : realFieldType.
Variable q : seq V -> V -> R.
Hypothesis q_ge0 : forall s y, 0 <= q s y.
Hypothesis q_sum1 : forall s, \sum_(y : V) q s y = 1.
Variable H : nat.
Hypothesis N_le_H : (N <= H)%N.

Local Notation path := (path par tok).
Local Notation chainf := (chainf q).
Local Notation chain := (chain q).
Local Notation dep := (depth par).
Local Notation blockt := (block N par tok (prow par tok q)).
Local Notation Cpt := (Cp N par tok (prow par tok q)).

(* the probability that the block bl followed by the target's continuation
   (drawn token by token from q after bl) is the sequence s, |s| >= |bl| *)
Definition continue (bl s : seq V) : R :=
  (prefix bl s)%:R * chainf bl (drop (size bl) s).

(* the probability that the block bl followed by the target's continuation
   starts with s (any |s|): the prefix form of the completed-block law *)
Definition pcontinue (bl s : seq V) : R :=
  if prefix bl s then chainf bl (drop (size bl) s) else (prefix s bl)%:R.

Section Verifier.
Variable A : finType.          (* the verifier's own randomness U ... *)
Variable nu : A -> R.          (* ... and its law *)
Variable ex : A -> 'I_N.       (* exit node *)
Variable b : A -> V.           (* bonus token *)

(* the completed-block law and exactness *)
Definition completed (s : seq V) : R :=
  \sum_(u : A) nu u * continue (emitted par tok ex b u) s.
Definition exact : Prop := forall s : H.-tuple V, completed s = chain s.
End Verifier.

(* the coupling form, on the product of the verifier's randomness and Z *)
Section Coupled.
Variable A : finType.
Variable nu : A -> R.
Definition pw (o : A * H.-tuple V) : R := nu o.1 * chain o.2.
Variable ex : A * H.-tuple V -> 'I_N.
Variable b : A * H.-tuple V -> V.
Definition coupled : Prop :=
  forall u (z : H.-tuple V), pw (u, z) != 0 -> prefix (emitted par tok ex b (u, z)) z.
Definition stopping_time : Prop :=
  forall u t (z z' : H.-tuple V), take t z = take t z' ->
    (L par ex (u, z) <= t)%N = (L par ex (u, z') <= t)%N.
End Coupled.

(** ** Sums over the target's continuations *)
Lemma chainf_cat pre s1 s2 : chainf pre (s1 ++ s2) = chainf pre s1 * chainf (pre ++ s1) s2.
Proof.
elim: s1 pre => [|y s1 IH] pre /=; first by rewrite cats0 mul1r.
by rewrite IH mulrA cat_rcons.
Qed.

Lemma sum_tuple0 (F : 0.-tuple V -> R) : \sum_(t : 0.-tuple V) F t = F [tuple].
Proof.
rewrite (bigD1 [tuple]) //= big1 ?addr0 // => t ht.
by case/eqP: ht; exact: tuple0.
Qed.

(* the continuation after bl sums to one *)
Lemma continue_sum1 n : forall pre e, (size e <= n)%N ->
  \sum_(t : n.-tuple V) (prefix e t)%:R * chainf (pre ++ e) (drop (size e) t) = 1.
Proof.
elim: n => [|n IH] pre e he.
  move: he; rewrite leqn0 size_eq0 => /eqP ->.
  by rewrite sum_tuple0 /= mul1r.
rewrite sum_tuple_cons; case: e he => [|y0 e] he.
  rewrite -[RHS](q_sum1 pre); apply: eq_bigr => y _.
  have h := IH (rcons pre y) [::] isT.
  rewrite -[RHS]mulr1 -[X in _ = _ * X]h mulr_sumr; apply: eq_bigr => t _.
  by rewrite !cats0 /= prefix0s drop0 !mul1r.
rewrite (bigD1 y0) //= [X in _ + X]big1 ?addr0 => [|y hy]; last first.
  by rewrite big1 // => t _; rewrite eq_sym (negbTE hy) mul0r.
rewrite -[RHS](IH (rcons pre y0) e) //; apply: eq_bigr => t _.
by rewrite eqxx /= cat_rcons.
Qed.

(* summing the continuation over the H-token sequences that start with s *)
Lemma continue_prefix n : forall pre e s, (size e <= n)%N -> (size s <= n)%N ->
  \sum_(t : n.-tuple V) (prefix e t)%:R * (prefix s t)%:R * chainf (pre ++ e) (drop (size e) t)
  = if prefix e s then chainf (pre ++ e) (drop (size e) s) else (prefix s e)%:R.
Proof.
elim: n => [|n IH] pre e s he hs.
  move: he hs; rewrite !leqn0 !size_eq0 => /eqP -> /eqP ->.
  by rewrite sum_tuple0 /= !mul1r.
rewrite sum_tuple_cons; case: e he => [|y0 e] he.
  rewrite prefix0s cats0 /= drop0; case: s hs => [|z s] hs.
    rewrite [RHS]/= -[RHS](continue_sum1 pre (isT : (size [::] <= n.+1)%N)) sum_tuple_cons.
    apply: eq_bigr => y _; apply: eq_bigr => t _.
    by rewrite /= cats0 !mul1r.
  rewrite (bigD1 z) //= [X in _ + X]big1 ?addr0 => [|y hy]; last first.
    by apply: big1 => t _; rewrite eq_sym (negbTE hy) mulr0 mul0r.
  rewrite -(tuple_chain q_sum1 (rcons pre z) (hs : (size s <= n)%N)) mulr_sumr; apply: eq_bigr => t _.
  by rewrite eqxx /= mul1r [LHS]mulrC -mulrA.
case: s hs => [|z s] hs.
  rewrite /= (bigD1 y0) //= [X in _ + X]big1 ?addr0 => [|y hy]; last first.
    by apply: big1 => t _; rewrite eq_sym (negbTE hy) !mul0r.
  rewrite -[RHS](continue_sum1 (rcons pre y0) (he : (size e <= n)%N)); apply: eq_bigr => t _.
  by rewrite eqxx /= mulr1 cat_rcons.
rewrite [RHS]/= (bigD1 y0) //= [X in _ + X]big1 ?addr0 => [|y hy]; last first.
  by apply: big1 => t _; rewrite eq_sym (negbTE hy) !mul0r.
have [ez|nz] := eqVneq y0 z; last first.
  by rewrite /= big1 // => t _; rewrite mulr0 mul0r.
rewrite eqxx /= -cat_rcons -(IH (rcons pre y0) e s) //.
Qed.

Lemma continue_ge0 bl s : 0 <= continue bl s.
Proof. by rewrite /continue mulr_ge0 ?ler0n // chainf_ge0. Qed.

Lemma emitted_size (A : finType) (ex : A -> 'I_N) (b : A -> V) u :
  size (emitted par tok ex b u) = L par ex u.
Proof. by rewrite /emitted /L size_rcons (size_path par_lt) ?ltn_ord. Qed.

Lemma L_le_H (A : finType) (ex : A -> 'I_N) u : (L par ex u <= H)%N.
Proof.
apply: leq_trans N_le_H; rewrite /L.
exact: leq_ltn_trans (depth_le par_lt (ltn_ord _)) (ltn_ord _).
Qed.

(** ** The coupling form implies exactness *)
Section CouplingExact.
Variable A : finType.
Variable nu : A -> R.
Hypothesis nu_sum1 : \sum_(u : A) nu u = 1.
Variable ex : A * H.-tuple V -> 'I_N.
Variable b : A * H.-tuple V -> V.
Hypothesis hcoupled : coupled nu ex b.
Hypothesis hstop : stopping_time ex.

Local Notation Lx := (L par ex).

(* the length is pinned by the tokens it reads *)
Lemma stop_eq u (z z' : H.-tuple V) :
  take (Lx (u, z)) z = take (Lx (u, z)) z' -> Lx (u, z') = Lx (u, z).
Proof.
move=> e; have h1 := hstop u e; rewrite leqnn in h1.
apply/eqP; rewrite eqn_leq -h1 /=.
have e' : take (Lx (u, z')) z = take (Lx (u, z')) z'.
  by rewrite -(take_take (esym h1)) e take_take // -h1.
by have := hstop u e'; rewrite leqnn => ->.
Qed.

Lemma coupled_take u (z : H.-tuple V) : pw nu (u, z) != 0 ->
  emitted par tok ex b (u, z) = take (Lx (u, z)) z.
Proof.
move=> h; have /prefixP [r e] := hcoupled h.
by rewrite e -(emitted_size ex b) take_size_cat.
Qed.

Lemma coupled_slice u (s z : H.-tuple V) : pw nu (u, z) != 0 ->
  continue (emitted par tok ex b (u, z)) s =
  (prefix (take (Lx (u, s)) s) z)%:R * chainf (take (Lx (u, s)) s) (drop (Lx (u, s)) s).
Proof.
move=> h; have ez := coupled_take h.
have hsz : forall (t : H.-tuple V) k, (k <= H)%N -> size (take k t) = k.
  by move=> t k hk; rewrite size_take size_tuple; case: ltngtP hk => // ->.
have pre_take : forall (t t' : H.-tuple V) k, (k <= H)%N ->
    prefix (take k t) t' = (take k t' == take k t).
  move=> t t' k hk; apply/prefixP/eqP => [[r ->]|<-].
    by rewrite take_size_cat ?hsz.
  by exists (drop k t'); rewrite cat_take_drop.
rewrite /continue ez (hsz _ _ (L_le_H ex _)) pre_take ?L_le_H //.
rewrite [in RHS]pre_take ?L_le_H //.
case: (eqVneq (take (Lx (u, z)) s) (take (Lx (u, z)) z)) => [e|ne].
  have hl := stop_eq (esym e); rewrite hl e eqxx.
  by [].
case: (eqVneq (take (Lx (u, s)) z) (take (Lx (u, s)) s)) => [e|]; last by rewrite !mul0r.
have hl := stop_eq (esym e); move: ne; rewrite hl e.
by rewrite eqxx.
Qed.

Theorem coupling_exact : exact (pw nu) ex b.
Proof.
move=> s; rewrite /completed -[RHS]mul1r -nu_sum1 mulr_suml.
rewrite (eq_bigr (fun o => pw nu (o.1, o.2) * continue (emitted par tok ex b (o.1, o.2)) s));
  last by case.
rewrite -(pair_bigA _ (fun u z => pw nu (u, z) * continue (emitted par tok ex b (u, z)) s)) /=.
apply: eq_bigr => u _; rewrite /pw /=.
have ht : (size (take (Lx (u, s)) s) <= H)%N by rewrite size_take size_tuple geq_minr.
have := tuple_chain q_sum1 [::] ht.
rewrite -/(chain _) => hsum.
have -> : chain s = chain (take (Lx (u, s)) s) *
                    chainf (take (Lx (u, s)) s) (drop (Lx (u, s)) s).
  by rewrite /chain -[take _ _ in RHS]cat0s -chainf_cat cat_take_drop.
rewrite -hsum mulr_suml mulr_sumr; apply: eq_bigr => z _.
have [h0|h] := eqVneq (pw nu (u, z)) 0.
  by rewrite -/(chain _) !mulrA; move: h0; rewrite /pw /= => ->; rewrite !mul0r.
rewrite (coupled_slice s h) -/(chain _) -!mulrA; congr (_ * _); rewrite [in RHS]mulrC -!mulrA; congr (_ * _); rewrite mulrC.
Qed.
End CouplingExact.

(** ** Exactness gives Theorem 1; the block law gives exactness *)
Section ExactVerifier.
Variable A : finType.
Variable nu : A -> R.
Hypothesis nu_ge0 : forall u, 0 <= nu u.
Hypothesis nu_sum1 : \sum_(u : A) nu u = 1.
Variable ex : A -> 'I_N.
Variable b : A -> V.

Local Notation vl := (vlaw nu ex b).

Lemma exact_prefix_bound : exact nu ex b -> prefix_bound par tok q nu H ex b.
Proof.
move=> hex p hp; rewrite /Pr /chain -(tuple_chain q_sum1 [::] hp).
rewrite (eq_bigr (fun t : H.-tuple V => completed nu ex b t * (prefix p t)%:R));
  last by move=> t _; rewrite hex.
rewrite /completed; under [X in _ <= X]eq_bigr => t _ do rewrite mulr_suml.
rewrite exchange_big /=; apply: ler_sum => u _.
under [X in _ <= X]eq_bigr => t _ do rewrite -mulrA.
rewrite -mulr_sumr; apply: ler_wpmul2l; first exact: nu_ge0.
case: (boolP (prefix p (emitted par tok ex b u))) => hpe; last first.
  by apply: sumr_ge0 => t _; rewrite mulr_ge0 ?ler0n ?continue_ge0.
have hs : (size (emitted par tok ex b u) <= H)%N by rewrite emitted_size L_le_H.
have -> : true%:R = 1 :> R by [].
rewrite -[X in X <= _](continue_sum1 [::] hs) le_eqVlt; apply/orP; left; apply/eqP.
apply: eq_bigr => t _; rewrite /continue cat0s.
case: (boolP (prefix (emitted par tok ex b u) t)) => h; last by rewrite !mul0r.
by rewrite (prefix_trans hpe h) mulr1.
Qed.

(* exactness in prefix form: for every s of at most H tokens, the completed block
   starts with s with the target's probability *)
Theorem exact_prefix_form : exact nu ex b -> forall s, (size s <= H)%N ->
  \sum_(u : A) nu u * pcontinue (emitted par tok ex b u) s = chain s.
Proof.
move=> hex p hp; rewrite /chain -(tuple_chain q_sum1 [::] hp).
rewrite (eq_bigr (fun t : H.-tuple V => completed nu ex b t * (prefix p t)%:R));
  last by move=> t _; rewrite hex.
rewrite /completed; under [RHS]eq_bigr => t _ do rewrite mulr_suml.
rewrite [RHS]exchange_big /=; apply: eq_bigr => u _.
have hs : (size (emitted par tok ex b u) <= H)%N by rewrite emitted_size L_le_H.
rewrite /pcontinue -[in RHS](cat0s (emitted par tok ex b u)).
rewrite -(continue_prefix [::] hs hp) mulr_sumr; apply: eq_bigr => t _.
by rewrite /continue cat0s -!mulrA [X in _ * (_ * X) = _]mulrC.
Qed.

(** Theorem 1 for exact verifiers *)
Theorem exact_verifier_ceiling : exact nu ex b -> EL par nu ex <= 1 + Cpt.
Proof.
move=> h; apply: (bounded_ceiling par_lt nu_ge0 nu_sum1 N_le_H).
exact: exact_prefix_bound.
Qed.

Theorem exact_verifier_ceiling_equality : exact nu ex b ->
  EL par nu ex = 1 + Cpt <-> (forall v y, (v < N)%N -> vl v y = blockt v y).
Proof.
move=> h; apply: (bounded_ceiling_equality N_gt0 par_lt sib_distinct q_sum1
                    nu_ge0 nu_sum1 N_le_H).
exact: exact_prefix_bound.
Qed.

(* the completed law depends on the verifier only through its (exit, bonus) law *)
Lemma completed_vlaw s : completed nu ex b s =
  \sum_(v < N) \sum_(y : V) vl v y * continue (rcons (path v) y) s.
Proof.
rewrite /completed /vlaw /Pr.
under [RHS]eq_bigr => v _ do under eq_bigr => y _ do rewrite mulr_suml.
under [RHS]eq_bigr => v _ do rewrite exchange_big /=.
rewrite [RHS]exchange_big /=; apply: eq_bigr => u _.
rewrite -(vlaw_pick ex b u (fun v y => nu u * continue (rcons (path v) y) s)).
by apply: eq_bigr => v _; apply: eq_bigr => y _; rewrite mulrCA mulrA.
Qed.

(* the walk along s stops at v exactly when s starts with path(v).y, y not a child token *)
Lemma vstar_Eblock v y (s : seq V) : vstar N par tok s = v ->
  ystar N par tok s = Some y -> Eblock N par tok v y s.
Proof.
move=> hv hy; have vN : (v < N)%N by rewrite -hv (vstar_lt par N_gt0 tok).
have /prefixP [r e] := vstar_prefix N_gt0 par_lt tok s; rewrite hv in e.
move: hy; rewrite /ystar hv e (drop_size_cat _ (size_path par_lt tok vN)).
case: r e => [|z r] e //= [ez]; subst z.
rewrite /Eblock -cat_rcons prefix_prefix /=.
rewrite -(pd_next_None N par tok); apply/eqP.
case en: (pd_next N par tok v y) => [c|] //.
have [hc [pc _]] := pd_next_some en.
have := walk_depth_le par_lt tok r (ltn_ord c).
move: hv; rewrite /vstar e (walk_cat par_lt sib_distinct) //= en => ->.
by rewrite (depthS par_lt hc) pc ltnn.
Qed.

Lemma Eblock_sum1 (s : seq V) : (N <= size s)%N ->
  \sum_(v < N) \sum_(y : V) (Eblock N par tok v y s)%:R = 1 :> R.
Proof.
move=> hs; have vN := vstar_lt par N_gt0 tok s.
have hd : (depth par (vstar N par tok s) < size s)%N.
  apply: leq_ltn_trans (depth_le par_lt vN) (leq_trans vN hs).
have [y0 hy] : exists y0, ystar N par tok s = Some y0.
  rewrite /ystar; case e: (drop _ s) => [|z r]; last by exists z.
  by move: hd; rewrite -subn_gt0 -size_drop e.
rewrite (bigD1 (Ordinal vN)) //= (bigD1 y0) //= vstar_Eblock //.
rewrite big1 ?addr0 => [|y hy0]; last first.
  case: (boolP (Eblock N par tok _ y s)) => // /(Eblock_vstar par_lt sib_distinct vN).
  by rewrite hy => /andP[_ /eqP [e]]; move: hy0; rewrite e eqxx.
rewrite big1 ?addr0 // => v hv; apply: big1 => y _.
case: (boolP (Eblock N par tok v y s)) => // /(Eblock_vstar par_lt sib_distinct (ltn_ord v)).
by case/andP=> /eqP e _; move: hv; rewrite -val_eqE /= e eqxx.
Qed.

(* every verifier whose (exit, bonus) law is the block law is exact *)
Theorem block_law_exact : (forall v y, (v < N)%N -> vl v y = blockt v y) -> exact nu ex b.
Proof.
move=> hl s; rewrite completed_vlaw.
have hs : (N <= size s)%N by rewrite size_tuple.
rewrite -[RHS]mul1r -(Eblock_sum1 hs) mulr_suml; apply: eq_bigr => v _.
rewrite mulr_suml; apply: eq_bigr => y _; rewrite hl // /block /pstop /Eblock.
case: ifP => hy; first by rewrite mulr0 mul0r andbF mul0r.
rewrite andbT -/(prow par tok q v y) -(chain_block par_lt tok q) // /continue.
case: (boolP (prefix _ _)) => hp; last by rewrite /= !mul0r mulr0.
move: hp => /prefixP [r e]; rewrite /= !mul1r {2}e /chain chainf_cat cat0s.
by rewrite e drop_size_cat.
Qed.

(* exact and saturating <-> the block law *)
Corollary exact_saturating_iff_block_law :
  exact nu ex b /\ EL par nu ex = 1 + Cpt <->
  (forall v y, (v < N)%N -> vl v y = blockt v y).
Proof.
split=> [[he hs]|hl]; first exact: (proj1 (exact_verifier_ceiling_equality he) hs).
have he := block_law_exact hl.
by split=> //; apply: (proj2 (exact_verifier_ceiling_equality he)).
Qed.
End ExactVerifier.

(** ** Two coupled verifiers that are exact: following Z and stopping at the root *)
Section Follow.
Variable A : finType.
Variable nu : A -> R.
Hypothesis nu_ge0 : forall u, 0 <= nu u.
Hypothesis nu_sum1 : \sum_(u : A) nu u = 1.
Variable y0 : V.   (* a default token for nth; never read *)

Local Notation Zp := (fun o : A * H.-tuple V => val o.2).
Definition follow_ex : A * H.-tuple V -> 'I_N := fex par N_gt0 tok Zp.
Definition follow_b : A * H.-tuple V -> V := fb N par tok Zp y0.

Lemma pw_ge0 o : 0 <= pw nu o.
Proof. by rewrite /pw mulr_ge0 // chainf_ge0. Qed.

Lemma pw_sum1 : \sum_o pw nu o = 1.
Proof.
rewrite -(pair_bigA _ (fun u z => pw nu (u, z))) /= -[RHS]nu_sum1.
apply: eq_bigr => u _; rewrite /pw /= -mulr_sumr.
by rewrite (proj1 (proj2 (canonical_space q_ge0 q_sum1 H))) mulr1.
Qed.

Lemma pw_Z_law s : (size s <= H)%N -> Pr (pw nu) (fun o => prefix s (Zp o)) = chain s.
Proof.
move=> hs; rewrite /Pr -(pair_bigA _ (fun u z => pw nu (u, z) * (prefix s z)%:R)) /=.
rewrite -[RHS]mul1r -[X in _ = X * _]nu_sum1 mulr_suml; apply: eq_bigr => u _.
rewrite /pw /= -(proj2 (proj2 (canonical_space q_ge0 q_sum1 H)) s hs) mulr_sumr.
by apply: eq_bigr => z _; rewrite mulrA.
Qed.

Lemma Zp_size o : (H <= size (Zp o))%N. Proof. by rewrite size_tuple. Qed.

Theorem follow_coupled : coupled nu follow_ex follow_b.
Proof. by move=> u z h; apply: (follow_prefix N_gt0 par_lt tok N_le_H Zp_size y0 h). Qed.

Theorem follow_stopping_time : stopping_time follow_ex.
Proof.
move=> u t z z' e; rewrite /L /follow_ex !(val_fex par N_gt0 tok Zp) /=.
have h1 := walk_take par_lt tok z t N_gt0; have h2 := walk_take par_lt tok z' t N_gt0.
rewrite (depth0 par) !add0n in h1 h2.
by rewrite /vstar h1 h2 e.
Qed.

Theorem follow_exact : exact (pw nu) follow_ex follow_b.
Proof. exact: (coupling_exact nu_sum1 follow_coupled follow_stopping_time). Qed.

Theorem follow_saturates_exact : EL par (pw nu) follow_ex = 1 + Cpt.
Proof.
exact: (follow_saturates N_gt0 par_lt sib_distinct q_sum1 pw_ge0 pw_sum1 N_le_H
          pw_Z_law Zp_size y0).
Qed.

(* stopping at the root with bonus Z_1: exact, E[L] = 1 *)
Definition root_ex : A * H.-tuple V -> 'I_N := @rex N N_gt0 _.
Definition root_b : A * H.-tuple V -> V := rb Zp y0.

Theorem root_exact : exact (pw nu) root_ex root_b.
Proof.
apply: (coupling_exact nu_sum1) => [u z h|u t z z' _] //.
exact: (root_prefix par N_gt0 tok N_le_H Zp_size y0 h).
Qed.
End Follow.
End Exactness.
