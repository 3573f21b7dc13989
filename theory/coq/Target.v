(* ========================================================================= *)
(*  exitlaw: the paper's Lemma 1 and Theorem 1 as probability statements.    *)
(*                                                                           *)
(*  ExitLaw.v proves the algebra for arbitrary rows p.  Here the rows come   *)
(*  from a target model and the statements are about random variables on a   *)
(*  finite probability space:                                                *)
(*  - the target is a next-token row q s : V -> R for every prefix s;        *)
(*    the tree's rows are the target's rows at the node paths (prow);        *)
(*  - (Omega, mu) is a finite probability space (mu >= 0, sum mu = 1) that   *)
(*    carries a target continuation Z : Omega -> seq V whose prefix law is   *)
(*    the chain rule up to a horizon H >= N:                                 *)
(*      Pr[s is a prefix of Z] = prod_t q(s_<t)(s_t)   for |s| <= H;         *)
(*  - a verifier's output is an exit node ex : Omega -> 'I_N and a bonus     *)
(*    token b : Omega -> V, its block is path(ex) ++ [b], length depth+1;    *)
(*  - coupled: on every outcome of positive probability the emitted block   *)
(*    is a prefix of Z (prefix_of_Z).  Exactness itself (the completed-block *)
(*    law) and the stopping-time condition are in Exactness.v.               *)
(*  Lemma 1 (target_exit_law, target_block_law): the exit node V*(Z) of the  *)
(*  walk along Z has law w, and (V*, the next token of Z) has the block law. *)
(*  Theorem 1 from the per-prefix bound (bounded_ceiling, ..._equality):    *)
(*  every verifier whose block starts with s with probability <= chain(s)  *)
(*  has E[1 + depth(exit)] <= 1 + C_p, with equality iff its (exit, bonus)   *)
(*  law is the block law; coupled verifiers meet the bound (coupled_...),  *)
(*  exact ones too (Exactness.v).  Through the joint ceiling of ExitLaw.v.   *)
(*  canonical_space: for every target and horizon, H-tuples with the chain   *)
(*  rule as weights are such a space (the hypotheses are satisfiable).       *)
(* ========================================================================= *)

From mathcomp Require Import all_ssreflect all_algebra.
From ExitLaw Require Import ExitLaw.
Set Implicit Arguments. Unset Strict Implicit. Unset Printing Implicit Defensive.
Import GRing.Theory Num.Theory Order.POrderTheory.
Local Open Scope ring_scope.

(** ** Indicator sums (generic) *)
Lemma sum_ind_pick (R : ringType) (I : finType) (T : eqType) (k : I -> T) (i0 : I)
  (F : I -> R) : injective k -> \sum_(i : I) (k i == k i0)%:R * F i = F i0.
Proof.
move=> kinj; rewrite (bigD1 i0) //= eqxx mul1r big1 ?addr0 // => i hi.
by case: eqP => [/kinj e|_]; [by move: hi; rewrite e eqxx | rewrite mul0r].
Qed.

Lemma sum_ind_le1 (R : numDomainType) (I : finType) (T : eqType) (k : I -> T) (x : T) :
  injective k -> \sum_(i : I) (x == k i)%:R <= 1 :> R.
Proof.
move=> kinj; case: (pickP (fun i => x == k i)) => [i0 /eqP ->|none].
  rewrite (eq_bigr (fun i => (k i == k i0)%:R * 1)) ?sum_ind_pick // => i _.
  by rewrite mulr1 eq_sym.
by rewrite big1 ?ler01 // => i _; rewrite none.
Qed.

(* if f <= g pointwise, sum g <= 1 and sum f = 1, then f = g *)
Lemma squeeze (R : numDomainType) (I : finType) (f g : I -> R) :
  (forall i, f i <= g i) -> \sum_i g i <= 1 -> \sum_i f i = 1 -> forall i, f i = g i.
Proof.
move=> fg g1 f1 i; apply/eqP; rewrite eq_sym -subr_eq0; apply/eqP.
have h0 : \sum_j (g j - f j) = 0.
  apply/eqP; rewrite eq_le sumr_ge0 ?andbT => [|j _]; last by rewrite subr_ge0.
  by rewrite sumrB f1 subr_le0.
by apply: (psumr_eq0P _ h0) => // j _; rewrite subr_ge0.
Qed.

Section Target.

(** ** The tree (as in ExitLaw.v) *)
Variable N : nat.
Variable par : nat -> nat.
Hypothesis N_gt0 : (0 < N)%N.
Hypothesis par_lt : forall u, (0 < u < N)%N -> (par u < u)%N.
Variable V : finType.
Variable tok : nat -> V.
Hypothesis sib_distinct : forall u1 u2, (0 < u1 < N)%N -> (0 < u2 < N)%N ->
  par u1 = par u2 -> tok u1 = tok u2 -> u1 = u2.
Variable R : realFieldType.

(** ** The target: a next-token row for every prefix, each a distribution *)
Variable q : seq V -> V -> R.
Hypothesis q_ge0 : forall s y, 0 <= q s y.
Hypothesis q_sum1 : forall s, \sum_(y : V) q s y = 1.

(* path v: the tokens from the root to v; prow v: the target row at node v *)
Definition path : nat -> seq V := up par [::] (fun u s => rcons s (tok u)).
Definition prow (v : nat) : V -> R := q (path v).

(* chain rule: chainf pre s = probability that the target continues pre with s *)
Fixpoint chainf (pre s : seq V) : R :=
  if s is y :: s' then q pre y * chainf (rcons pre y) s' else 1.
Definition chain (s : seq V) : R := chainf [::] s.

Local Notation Pt := (P par tok prow).
Local Notation wt := (w N par tok prow).
Local Notation Cpt := (Cp N par tok prow).
Local Notation blockt := (block N par tok prow).
Local Notation dep := (depth par).

Lemma path0 : path 0 = [::]. Proof. by []. Qed.
Lemma pathS u : (0 < u < N)%N -> path u = rcons (path (par u)) (tok u).
Proof. by move=> h; rewrite /path (upS par_lt). Qed.

Lemma prow_ge0 v y : (v < N)%N -> 0 <= prow v y. Proof. by move=> _; apply: q_ge0. Qed.
Lemma prow_sum1 v : (v < N)%N -> \sum_(y : V) prow v y = 1.
Proof. by move=> _; apply: q_sum1. Qed.

Lemma chainf_rcons pre s y : chainf pre (rcons s y) = chainf pre s * q (pre ++ s) y.
Proof.
elim: s pre => [|z s IH] pre /=; first by rewrite cats0 mulr1 mul1r.
by rewrite IH mulrA cat_rcons.
Qed.

Lemma chainf_ge0 pre s : 0 <= chainf pre s.
Proof. by elim: s pre => [|y s IH] pre /=; rewrite ?ler01 // mulr_ge0. Qed.

Lemma size_path v : (v < N)%N -> size (path v) = dep v.
Proof.
move: v; apply: (@node_ind N par par_lt (fun v => size (path v) = dep v)) => [|u h IH] //.
by rewrite pathS // size_rcons IH (depthS par_lt h).
Qed.

Lemma depth_le v : (v < N)%N -> (dep v <= v)%N.
Proof.
move: v; apply: (@node_ind N par par_lt (fun v => dep v <= v)%N) => [|u h IH] //.
by rewrite (depthS par_lt h); apply: leq_ltn_trans IH (par_lt h).
Qed.

Lemma chain_path v : (v < N)%N -> chain (path v) = Pt v.
Proof.
move: v; apply: (@node_ind N par par_lt (fun v => chain (path v) = Pt v)) => [|u h IH] //.
rewrite pathS // /chain chainf_rcons -/(chain _) IH (PS par_lt tok prow h).
by rewrite cat0s /a /prow.
Qed.

Lemma chain_block v y : (v < N)%N -> chain (rcons (path v) y) = Pt v * prow v y.
Proof. by move=> vN; rewrite /chain chainf_rcons -/(chain _) chain_path. Qed.

Lemma anc_path c x : (x < N)%N -> anc par c x -> prefix (path c) (path x).
Proof.
move: x; apply: (@node_ind N par par_lt (fun x => anc par c x -> prefix (path c) (path x))) => [|x h IH].
  by rewrite anc0 => /eqP ->; rewrite prefix_refl.
rewrite (ancS par_lt) // => /orP[/eqP -> |/IH hp]; first by rewrite prefix_refl.
by rewrite (pathS h); apply: prefix_trans hp (prefix_rcons _ _).
Qed.

(** ** The canonical space: H-tuples of tokens weighted by the chain rule.
    It carries a target continuation (the tuple itself) with the chain-rule
    prefix law, for every target and horizon: the hypotheses below on
    (Omega, mu, Z) are satisfiable. *)
Lemma val_cons_tuple n y (t : n.-tuple V) : val (cons_tuple y t) = y :: val t.
Proof. by []. Qed.

Lemma sum_tuple_cons n (F : n.+1.-tuple V -> R) :
  \sum_(t : n.+1.-tuple V) F t = \sum_(y : V) \sum_(t : n.-tuple V) F (cons_tuple y t).
Proof.
rewrite pair_bigA /= (reindex (fun i : V * n.-tuple V => cons_tuple i.1 i.2)) //=.
exists (fun t : n.+1.-tuple V => (thead t, behead_tuple t)) => [[y t] _|t _].
  by congr pair; apply: val_inj.
by apply: val_inj; rewrite /= [in RHS](tuple_eta t).
Qed.

Lemma tuple_chain n : forall pre s, (size s <= n)%N ->
  \sum_(t : n.-tuple V) chainf pre t * (prefix s t)%:R = chainf pre s.
Proof.
elim: n => [|n IH] pre s hs.
  move: hs; rewrite leqn0 size_eq0 => /eqP ->.
  rewrite (bigD1 [tuple]) //= big1 ?addr0 ?mulr1 // => t ht.
  by case/eqP: ht; exact: tuple0.
rewrite sum_tuple_cons; case: s hs => [|y0 s] hs.
  rewrite [RHS]/= -[RHS](q_sum1 pre); apply: eq_bigr => y _.
  have h := IH (rcons pre y) [::] isT; rewrite [RHS]/= in h.
  rewrite -[RHS]mulr1 -[X in _ = _ * X]h mulr_sumr; apply: eq_bigr => t _.
  by rewrite val_cons_tuple /= prefix0s mulrA.
rewrite (bigD1 y0) //= [X in _ + X]big1 ?addr0 => [|y hy]; last first.
  rewrite big1 // => t _.
  by rewrite eq_sym (negbTE hy) mulr0.
rewrite [RHS]/= -(IH (rcons pre y0) s) // mulr_sumr; apply: eq_bigr => t _.
by rewrite eqxx /= mulrA.
Qed.

Theorem canonical_space n :
  (forall t : n.-tuple V, 0 <= chain t) /\ (\sum_(t : n.-tuple V) chain t = 1) /\
  (forall s, (size s <= n)%N ->
     \sum_(t : n.-tuple V) chain t * (prefix s t)%:R = chain s).
Proof.
split=> [t|]; first exact: chainf_ge0.
split=> [|s hs]; last exact: tuple_chain.
apply: etrans (@tuple_chain n [::] [::] isT).
by apply: eq_bigr => t _; rewrite prefix0s mulr1.
Qed.

(** ** The probability space, the target continuation Z and its law *)
Variable Omega : finType.
Variable mu : Omega -> R.
Hypothesis mu_ge0 : forall o, 0 <= mu o.
Hypothesis mu_sum1 : \sum_(o : Omega) mu o = 1.
Definition Pr (E : pred Omega) : R := \sum_(o : Omega) mu o * (E o)%:R.

Variable H : nat.
Hypothesis N_le_H : (N <= H)%N.
Variable Z : Omega -> seq V.
Hypothesis Z_law : forall s, (size s <= H)%N -> Pr (fun o => prefix s (Z o)) = chain s.

Lemma Pr_ge0 (E : pred Omega) : 0 <= Pr E.
Proof. by apply: sumr_ge0 => o _; rewrite mulr_ge0 ?ler0n. Qed.

Lemma Pr_le (E F : pred Omega) : (forall o, mu o != 0 -> E o -> F o) -> Pr E <= Pr F.
Proof.
move=> EF; apply: ler_sum => o _; have [->|m0] := eqVneq (mu o) 0; first by rewrite !mul0r.
by apply: ler_wpmul2l => //; case: (boolP (E o)) => [/(EF _ m0) ->|] //= _; rewrite ler0n.
Qed.

Lemma block_size v y : (v < N)%N -> (size (rcons (path v) y) <= H)%N.
Proof.
move=> vN; rewrite size_rcons size_path //; apply: leq_trans N_le_H.
by apply: leq_ltn_trans (depth_le vN) vN.
Qed.

(** ** Lemma 1: the walk along Z, its exit node V* and next token Y* *)
Fixpoint walkf (v : nat) (z : seq V) : nat :=
  if z is y :: z' then
    (if pd_next N par tok v y is Some c then walkf (val c) z' else v)
  else v.
Definition vstar (z : seq V) : nat := walkf 0 z.
Definition ystar (z : seq V) : option V := ohead (drop (dep (vstar z)) z).

Lemma pd_next_child u : (0 < u < N)%N ->
  exists2 c : 'I_N, pd_next N par tok (par u) (tok u) = Some c & val c = u.
Proof.
move=> h; rewrite /pd_next; case: pickP => [c /andP[hc /eqP ht]|none].
  exists c => //; apply: sib_distinct => //; first by rewrite (andP hc).1 ltn_ord.
  by rewrite (eqP (andP hc).2).
by move: (none (Ordinal (proj2 (andP h)))); rewrite /isch /= (andP h).1 !eqxx.
Qed.

Lemma walk_cat v s : (v < N)%N -> walkf 0 (path v ++ s) = walkf v s.
Proof.
move=> vN; move: v vN s.
apply: (@node_ind N par par_lt (fun v => forall s, walkf 0 (path v ++ s) = walkf v s))
  => [//|u h IH] s.
rewrite pathS // cat_rcons IH /=; have [c -> <-] := pd_next_child h.
by [].
Qed.

Lemma walk_stop v y s : y \notin ctoks N par tok v -> walkf v (y :: s) = v.
Proof.
by rewrite -(pd_next_None N par tok) /= => /eqP ->.
Qed.

(* the event "Z starts with path(v).y and y is not a child token of v" *)
Definition Eblock (v : nat) (y : V) (z : seq V) : bool :=
  prefix (rcons (path v) y) z && (y \notin ctoks N par tok v).

Lemma Eblock_vstar v y z : (v < N)%N -> Eblock v y z ->
  (vstar z == v) && (ystar z == Some y).
Proof.
move=> vN /andP[/prefixP [s ->] hy]; rewrite -cats1 -catA cat1s.
have hv : vstar (path v ++ y :: s) = v by rewrite /vstar walk_cat // walk_stop.
by rewrite /ystar hv eqxx /= (drop_size_cat _ (size_path vN)).
Qed.

Lemma Pr_Eblock v y : (v < N)%N -> Pr (fun o => Eblock v y (Z o)) = blockt v y.
Proof.
move=> vN; rewrite /block /pstop; case: ifP => [hy|hy].
  by rewrite mulr0 /Pr big1 // => o _; rewrite /Eblock hy andbF mulr0.
rewrite -/(prow v y) -chain_block // -Z_law ?block_size //.
by apply: eq_bigr => o _; rewrite /Eblock hy andbT.
Qed.

Lemma sum_Pr (I : finType) (E : I -> pred Omega) :
  \sum_(i : I) Pr (E i) = \sum_(o : Omega) mu o * \sum_(i : I) (E i o)%:R.
Proof.
rewrite exchange_big /=; apply: eq_bigr => o _.
by rewrite mulr_sumr.
Qed.

Lemma sum_Pr_le1 (I : finType) (E : I -> pred Omega) :
  (forall o, \sum_(i : I) (E i o)%:R <= 1 :> R) -> \sum_(i : I) Pr (E i) <= 1.
Proof.
move=> h; rewrite sum_Pr; apply: (@le_trans _ _ (\sum_o mu o)); last by rewrite mu_sum1.
by apply: ler_sum => o _; rewrite -[X in _ <= X]mulr1; apply: ler_wpmul2l.
Qed.

Theorem target_block_law v y : (v < N)%N ->
  Pr (fun o => (vstar (Z o) == v) && (ystar (Z o) == Some y)) = blockt v y.
Proof.
move=> vN.
pose F (i : 'I_N * V) := Pr (fun o => (vstar (Z o) == i.1) && (ystar (Z o) == Some i.2)).
pose G (i : 'I_N * V) := Pr (fun o => Eblock i.1 i.2 (Z o)).
have GF : forall i, G i <= F i.
  by move=> [u z]; apply: Pr_le => o _; apply: Eblock_vstar.
have F1 : \sum_i F i <= 1.
  apply: sum_Pr_le1 => o.
  rewrite (eq_bigr (fun i : 'I_N * V =>
     ((vstar (Z o), ystar (Z o)) == (val i.1, Some i.2))%:R)) => [|i _]; last first.
    by rewrite xpair_eqE.
  apply: (@sum_ind_le1 _ _ _ (fun i : 'I_N * V => (val i.1, Some i.2))).
  by move=> [u1 y1] [u2 y2] [/val_inj -> ->].
have G1 : \sum_i G i = 1.
  rewrite -(block_sums_to_one N_gt0 par_lt prow_sum1 sib_distinct) [RHS]pair_bigA /=.
  by apply: eq_bigr => [[u z]] _; rewrite /G Pr_Eblock.
rewrite -(Pr_Eblock y vN).
by have := squeeze GF F1 G1 (Ordinal vN, y); rewrite /F /G /= => ->.
Qed.

Theorem target_exit_law v : (v < N)%N -> Pr (fun o => vstar (Z o) == v) = wt v.
Proof.
move=> vN.
pose F (u : 'I_N) := Pr (fun o => vstar (Z o) == u).
pose G (u : 'I_N) := wt u.
have GF : forall u, G u <= F u.
  move=> u; rewrite /G -(block_exit_marginal prow_sum1 sib_distinct) //.
  under eq_bigr => z _ do rewrite -target_block_law //.
  rewrite sum_Pr /F /Pr; apply: ler_sum => o _; apply: ler_wpmul2l => //.
  case: (eqVneq (vstar (Z o)) u) => [_|_] /=; last by rewrite big1.
  apply: (@sum_ind_le1 _ _ _ (fun z => Some z) (ystar (Z o))).
  by move=> z1 z2 [].
have F1 : \sum_u F u <= 1.
  apply: sum_Pr_le1 => o; apply: (@sum_ind_le1 _ _ _ (fun u : 'I_N => val u)) => //.
  exact: val_inj.
have G1 : \sum_u G u = 1 by exact: (exit_law_sums_to_one N_gt0 par_lt).
by have := squeeze GF F1 G1 (Ordinal vN); rewrite /F /G /= => <-.
Qed.

(** ** Verifiers, exactness, and Theorem 1 *)
Section Verifier.
Variable ex : Omega -> 'I_N.    (* exit node *)
Variable b : Omega -> V.        (* bonus token *)

(* emitted block and its length *)
Definition emitted (o : Omega) : seq V := rcons (path (ex o)) (b o).
Definition L (o : Omega) : nat := (dep (ex o)).+1.

(* the coupling form: on every outcome of positive probability the emitted
   block is a prefix of Z.  This alone is not exactness (Exactness.v: a verifier
   that looks at a token of Z it does not emit has this property and is not
   exact); it is what the ceiling below needs. *)
Definition prefix_of_Z : Prop := forall o, mu o != 0 -> prefix (emitted o) (Z o).
(* the per-prefix bound: the block starts with s with probability at most the
   target probability of s.  Exactness implies it (Exactness.exact_prefix_bound),
   and so does the coupling form (coupled_prefix_bound). *)
Definition prefix_bound : Prop :=
  forall s, (size s <= H)%N -> Pr (fun o => prefix s (emitted o)) <= chain s.

(* expected block length and the law of (exit, bonus) *)
Definition EL : R := \sum_(o : Omega) mu o * (L o)%:R.
Definition vlaw (v : nat) (y : V) : R := Pr (fun o => (val (ex o) == v) && (b o == y)).

Lemma vlaw_pick o (F : 'I_N -> V -> R) :
  \sum_(v < N) \sum_(y : V) ((val (ex o) == v) && (b o == y))%:R * F v y = F (ex o) (b o).
Proof.
rewrite pair_bigA /=.
rewrite (eq_bigr (fun i : 'I_N * V =>
   ((val i.1, i.2) == (val (ex o), b o))%:R * F i.1 i.2)) => [|[v y] _] /=.
  apply: (@sum_ind_pick _ _ _ (fun i : 'I_N * V => (val i.1, i.2)) (ex o, b o)
            (fun i => F i.1 i.2)).
  by move=> [u1 y1] [u2 y2] [/val_inj -> ->].
by rewrite xpair_eqE (eq_sym (val v)) (eq_sym y).
Qed.

Lemma vlaw_ge0 v y : (v < N)%N -> 0 <= vlaw v y.
Proof. by move=> _; apply: Pr_ge0. Qed.

Lemma vlaw_sum1 : \sum_(v < N) \sum_(y : V) vlaw v y = 1.
Proof.
rewrite /vlaw; under eq_bigr => v _ do rewrite sum_Pr.
rewrite exchange_big /= -[RHS]mu_sum1; apply: eq_bigr => o _.
rewrite -mulr_sumr -[RHS]mulr1; congr (_ * _).
apply: etrans (vlaw_pick o (fun _ _ => 1)).
by apply: eq_bigr => v _; apply: eq_bigr => y _; rewrite mulr1.
Qed.

Lemma EL_vlaw : EL = \sum_(v < N) \sum_(y : V) vlaw v y * (1 + (dep v)%:R).
Proof.
rewrite /EL /vlaw /Pr.
under [RHS]eq_bigr => v _ do under eq_bigr => y _ do rewrite mulr_suml.
under [RHS]eq_bigr => v _ do rewrite exchange_big /=.
rewrite [RHS]exchange_big /=; apply: eq_bigr => o _.
rewrite /L mulrS; apply: esym.
apply: etrans (vlaw_pick o (fun v _ => mu o * (1 + (dep v)%:R))).
by apply: eq_bigr => v _; apply: eq_bigr => y _; rewrite !mulrA [_ * mu o]mulrC.
Qed.

Lemma subtree_vlaw c :
  subtree_mass N par (exit_marginal vlaw) c = Pr (fun o => anc par c (ex o)).
Proof.
rewrite /Pr (eq_bigr (fun o => \sum_(v < N) \sum_(y : V)
   mu o * (((val (ex o) == v) && (b o == y))%:R * (anc par c v)%:R))); last first.
  move=> o _; have h := vlaw_pick o (fun v _ => (anc par c v)%:R); rewrite /= in h.
  by rewrite -h mulr_sumr; apply: eq_bigr => v _; rewrite mulr_sumr.
rewrite exchange_big /subtree_mass [LHS]big_mkcond /=; apply: eq_bigr => v _.
rewrite /exit_marginal [RHS]exchange_big /=; case: ifP => hc.
  apply: eq_bigr => y _; rewrite /vlaw /Pr; apply: eq_bigr => o _.
  by rewrite mulr1.
by rewrite big1 // => y _; rewrite big1 // => o _; rewrite !mulr0.
Qed.

(* the per-prefix bound gives the joint prefix inequality of ExitLaw.v *)
Lemma bound_block_vlaw : prefix_bound -> forall v y, (v < N)%N ->
  vlaw v y + \sum_(c < N | isch par v c && (tok c == y))
                subtree_mass N par (exit_marginal vlaw) c <= Pt v * prow v y.
Proof.
move=> hb v y vN; under eq_bigr => c _ do rewrite subtree_vlaw.
rewrite -chain_block //; apply: le_trans (hb _ (block_size y vN)).
rewrite /vlaw /Pr exchange_big /= -big_split /=.
apply: ler_sum => o _; rewrite -mulr_sumr -mulrDr.
apply: ler_wpmul2l => //; have hexo := prefix_refl (emitted o).
rewrite [in X in prefix _ X]/emitted in hexo.
case: (boolP (prefix (rcons (path v) y) (emitted o))) => hp.
  apply: (@le_trans _ _ ((val (ex o) == v)%:R + (anc par v (ex o) && (val (ex o) != v))%:R)).
    apply: ler_add; first by rewrite ler_nat; case: (_ == v); case: (_ == y).
    rewrite -(children_anc par_lt) ?ltn_ord // [X in _ <= X](bigID (fun c : 'I_N => tok c == y)) /=.
    by rewrite ler_addl; apply: sumr_ge0 => c _; rewrite ler0n.
  by case: (eqVneq (val (ex o)) v) => [_|_] /=; rewrite ?andbF ?addr0 ?add0r ?andbT;
     case: (anc _ _ _); rewrite ?le_refl ?ler01.
rewrite big1 ?addr0 => [|c /andP[hc /eqP hy]]; last first.
  case: (boolP (anc par c (ex o))) => // hanc; case/negP: hp.
  have cN : (0 < c < N)%N by rewrite (andP hc).1 ltn_ord.
  rewrite -hy -(eqP (andP hc).2) -pathS //.
  apply: prefix_trans (anc_path (ltn_ord _) hanc) _.
  by apply: prefix_trans (prefix_rcons _ (b o)) hexo.
have -> : (val (ex o) == v) && (b o == y) = false.
  by apply/negP => /andP[/eqP e /eqP e']; move: hp; rewrite -e -e' hexo.
by [].
Qed.

Lemma coupled_prefix_bound : prefix_of_Z -> prefix_bound.
Proof.
move=> hex s hs; rewrite -Z_law //; apply: Pr_le => o m0 hp.
exact: prefix_trans hp (hex o m0).
Qed.

(** Theorem 1 (fixed-tree ceiling) from the per-prefix bound; Exactness.v
    derives the bound from exactness (exact_verifier_ceiling) *)
Theorem bounded_ceiling : prefix_bound -> EL <= 1 + Cpt.
Proof.
move=> hb; rewrite EL_vlaw.
exact: (@fixed_tree_ceiling_joint N par par_lt V tok R prow vlaw
          vlaw_ge0 vlaw_sum1 (bound_block_vlaw hb)).
Qed.

Theorem bounded_ceiling_equality : prefix_bound ->
  EL = 1 + Cpt <-> (forall v y, (v < N)%N -> vlaw v y = blockt v y).
Proof.
move=> hb; rewrite EL_vlaw.
exact: (@fixed_tree_ceiling_joint_equality N par N_gt0 par_lt V tok R prow
          prow_sum1 sib_distinct vlaw vlaw_ge0 vlaw_sum1 (bound_block_vlaw hb)).
Qed.

(** Theorem 1 for coupled verifiers (block a prefix of Z), stopping time or not *)
Theorem coupled_ceiling : prefix_of_Z -> EL <= 1 + Cpt.
Proof. by move=> hex; apply: bounded_ceiling; apply: coupled_prefix_bound. Qed.

Theorem coupled_ceiling_equality : prefix_of_Z ->
  EL = 1 + Cpt <-> (forall v y, (v < N)%N -> vlaw v y = blockt v y).
Proof. by move=> hex; apply: bounded_ceiling_equality; apply: coupled_prefix_bound. Qed.

(* with Lemma 1: saturation iff (exit, bonus) has the law of (vstar Z, ystar Z) *)
Corollary coupled_saturates_iff_target_law : prefix_of_Z ->
  EL = 1 + Cpt <-> (forall v y, (v < N)%N ->
    vlaw v y = Pr (fun o => (vstar (Z o) == v) && (ystar (Z o) == Some y))).
Proof.
move=> hex; rewrite coupled_ceiling_equality //.
by split=> h v y vN; rewrite h // target_block_law.
Qed.

End Verifier.

(** ** Two coupled verifiers, on any space whose Z is at least H tokens long:
    following Z through the tree (exit V*, bonus Y*: saturating) and stopping
    at the root (exit root, bonus Z_1: E[L] = 1).  Their blocks are prefixes
    of Z; Exactness.v proves them exact in the paper's sense on the product of
    the verifier's randomness and Z, from their stopping times (follow_exact,
    root_exact). *)
Section TwoVerifiers.
Hypothesis Z_size : forall o, (H <= size (Z o))%N.
Variable y0 : V.   (* a default token for nth; never read (Z is long enough) *)

Lemma pd_next_some v y c : pd_next N par tok v y = Some c ->
  (0 < c < N)%N /\ par c = v /\ tok c = y.
Proof.
rewrite /pd_next; case: pickP => [c' /andP[/andP[c0 /eqP pc] /eqP tc]|] // [<-].
by rewrite c0 ltn_ord.
Qed.

Lemma walk_lt u z : (u < N)%N -> (walkf u z < N)%N.
Proof.
elim: z u => [|y z IH] u uN //=.
by case: (pd_next N par tok u y) => [c|] //; apply: IH.
Qed.

Lemma walk_path u z : (u < N)%N -> prefix (path (walkf u z)) (path u ++ z).
Proof.
elim: z u => [|y z IH] u uN /=; first by rewrite cats0 prefix_refl.
case e: (pd_next N par tok u y) => [c|]; last exact: prefix_prefix.
have [hc [pc tc]] := pd_next_some e.
by rewrite -cat_rcons -pc -tc -pathS //; apply: IH.
Qed.

Lemma vstar_lt z : (vstar z < N)%N. Proof. exact: walk_lt. Qed.
Lemma vstar_prefix z : prefix (path (vstar z)) z.
Proof. by have := walk_path z N_gt0. Qed.

Lemma vstar_short o : (dep (vstar (Z o)) < size (Z o))%N.
Proof.
apply: leq_ltn_trans (depth_le (vstar_lt _)) _.
by apply: leq_trans (vstar_lt _) (leq_trans N_le_H (Z_size o)).
Qed.

(* following Z: exit V*(Z), bonus the next token of Z *)
Definition fex (o : Omega) : 'I_N := insubd (Ordinal N_gt0) (vstar (Z o)).
Definition fb (o : Omega) : V := nth y0 (Z o) (dep (vstar (Z o))).

Lemma val_fex o : val (fex o) = vstar (Z o).
Proof. by rewrite val_insubd vstar_lt. Qed.

Theorem follow_prefix : prefix_of_Z fex fb.
Proof.
move=> o _; rewrite /emitted /fb val_fex.
have hp := vstar_prefix (Z o); have hs := vstar_short o; have hx := vstar_lt (Z o).
move: (vstar (Z o)) hp hs hx => x /prefixP [s e] hs hx.
rewrite e -(size_path hx) in hs *.
case: s e hs => [|y s] _ hs; first by rewrite cats0 ltnn in hs.
by rewrite nth_cat ltnn subnn /= -cat_rcons prefix_prefix.
Qed.

Lemma ystar_fb o : ystar (Z o) = Some (fb o).
Proof. by rewrite /ystar /fb (drop_nth y0 (vstar_short o)). Qed.

Theorem follow_law v y : (v < N)%N -> vlaw fex fb v y = blockt v y.
Proof.
move=> vN; rewrite -target_block_law //; apply: eq_bigr => o _.
by rewrite val_fex ystar_fb.
Qed.

Theorem follow_saturates : EL fex = 1 + Cpt.
Proof. exact: (proj2 (coupled_ceiling_equality follow_prefix) follow_law). Qed.

(* the walk only reads the tokens it matches, plus one: L* = depth(V* Z) + 1
   is a stopping time (whether L* <= t is decided by Z_{1:t}) *)
Lemma walk_depth_le u z : (u < N)%N -> (dep u <= dep (walkf u z))%N.
Proof.
elim: z u => [|y z IH] u uN //=.
case e: (pd_next N par tok u y) => [c|] //.
have [hc [pc _]] := pd_next_some e.
by apply: leq_trans (IH _ (ltn_ord c)); rewrite (depthS par_lt hc) pc.
Qed.

Lemma walk_take u z t : (u < N)%N ->
  (dep (walkf u z) < dep u + t)%N = (dep (walkf u (take t z)) < dep u + t)%N.
Proof.
elim: z u t => [|y z IH] u t uN //.
case: t => [|t]; first by rewrite addn0 take0 ltnn ltnNge walk_depth_le.
rewrite /=; case e: (pd_next N par tok u y) => [c|] //.
have [hc [pc _]] := pd_next_some e.
have dc : dep c = (dep u).+1 by rewrite (depthS par_lt hc) pc.
by rewrite addnS -addSn -dc; apply: IH.
Qed.

(* TEV (paper Algorithm 1, ExitLaw.tev_alg: ancestor-mask prefix products,
   m = C a, an exit draw from w, a bonus draw from the masked exit row) has the
   law of (vstar Z, ystar Z): the verifier following Z is a coupling of TEV's
   output with the target continuation, and it saturates (paper B.1).  TEV as
   its own two draws is proved exact in Procedures.v (tev_exact). *)
Theorem tev_coupling :
  prefix_of_Z fex fb /\
  (forall v y, (v < N)%N -> vlaw fex fb v y = tev_alg N par tok prow v y) /\
  EL fex = 1 + Cpt.
Proof.
split; first exact: follow_prefix.
split; last exact: follow_saturates.
move=> v y vN; rewrite follow_law // tev_algorithm_realises_block //.
  by move=> u z _; apply: q_ge0.
by move=> u _; apply: q_sum1.

Qed.

(* stopping at the root: exit root, bonus Z_1; L = 1 is a stopping time *)
Definition rex (o : Omega) : 'I_N := Ordinal N_gt0.
Definition rb (o : Omega) : V := nth y0 (Z o) 0.

Theorem root_prefix : prefix_of_Z rex rb.
Proof.
move=> o _; rewrite /emitted /rb /=; have := Z_size o.
case: (Z o) => [|z s] /=; last by rewrite eqxx prefix0s.
rewrite leqn0 => /eqP H0; have := leq_trans N_gt0 N_le_H.
by rewrite H0.
Qed.

Theorem root_length : EL rex = 1.
Proof. by rewrite /EL /L /= -[RHS]mu_sum1; apply: eq_bigr => o _; rewrite mulr1. Qed.

End TwoVerifiers.

End Target.
