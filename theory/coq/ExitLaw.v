(* ========================================================================= *)
(*  exitlaw: machine-checked fixed-tree results (Coq 8.16 + MathComp 1.15).  *)
(*                                                                           *)
(*  Mirrors docs/design.md §1.  A draft tree is given exactly as in §1.1:    *)
(*  nodes are the naturals 0..N-1, node 0 is the root, every other           *)
(*  node u has a parent par u < u (topological order) and a token tok u in   *)
(*  a finite vocabulary V, and siblings carry distinct tokens.  Every node v *)
(*  has a target row p v : V -> R, a distribution (non-negative, sums to 1), *)
(*  over an arbitrary ordered field R (realFieldType: rat, the reals, ...).  *)
(*  par, tok and p are total functions on nat; only their values on 0..N-1   *)
(*  matter (a parent array padded arbitrarily).                              *)
(*                                                                           *)
(*  Functions defined by recursion towards the root (prefix probability P,   *)
(*  depth, ancestor test) use one generic combinator [up]: it satisfies      *)
(*  up 0 = base and up v = step v (up (par v)) for 0 < v < N (lemmas up0,    *)
(*  upS), exactly the recursive definitions of §1.2.  Induction over         *)
(*  the tree is [node_ind] (from the root outwards).                         *)
(*                                                                           *)
(*  Everything is stated inside Section Tree; when the section closes, every *)
(*  theorem is universally quantified over the tree (N, par, tok), the field *)
(*  R, the vocabulary V, the rows p and exactly those of the hypotheses      *)
(*  N_gt0, par_lt, p_ge0, p_sum1, sib_distinct that its proof uses.          *)
(* ========================================================================= *)

From mathcomp Require Import all_ssreflect all_algebra.
Set Implicit Arguments. Unset Strict Implicit. Unset Printing Implicit Defensive.
Import GRing.Theory Num.Theory Order.POrderTheory.
Local Open Scope ring_scope.

Section Tree.

(** ** The tree shape *)
Variable N : nat.                 (* number of nodes; the root is node 0 *)
Variable par : nat -> nat.        (* parent of each non-root node *)
Hypothesis N_gt0 : (0 < N)%N.
Hypothesis par_lt : forall u, (0 < u < N)%N -> (par u < u)%N.

(* [up base step v]: recursion from v towards the root, with fuel v. *)
Fixpoint upf (T : Type) (base : T) (step : nat -> T -> T) (k v : nat) : T :=
  if k is k'.+1 then (if v == 0%N then base else step v (upf base step k' (par v)))
  else base.
Definition up T base step v := @upf T base step v v.

Lemma upf_fuel T base step v k : (v < N)%N -> (v <= k)%N ->
  @upf T base step k v = up base step v.
Proof.
rewrite /up; elim/ltn_ind: v k => v IH [|k] vN vk.
  by rewrite leqn0 in vk; rewrite (eqP vk).
case: v IH vN vk => [|v] IH vN vk //=.
have pv : (par v.+1 < v.+1)%N by apply: par_lt; rewrite vN.
have pN : (par v.+1 < N)%N by exact: ltn_trans pv vN.
rewrite (IH (par v.+1) pv k pN) ?(IH (par v.+1) pv v pN) //.
by rewrite -ltnS (leq_trans pv vk).
Qed.

Lemma up0 T base step : @up T base step 0 = base.
Proof. by []. Qed.

Lemma upS T base step v : (0 < v < N)%N ->
  @up T base step v = step v (up base step (par v)).
Proof.
case/andP=> v0 vN; have pv := par_lt (introT andP (conj v0 vN)).
rewrite /up; case: v v0 vN pv => [|v] //= _ vN pv.
by rewrite upf_fuel // ?(ltn_trans pv vN) // -ltnS.
Qed.

Lemma node_ind (Q : nat -> Prop) : Q 0%N ->
  (forall v, (0 < v < N)%N -> Q (par v) -> Q v) -> forall v, (v < N)%N -> Q v.
Proof.
move=> Q0 QS; elim/ltn_ind=> v IH vN; case: (posnP v) => [->|v0] //.
have h : (0 < v < N)%N by rewrite v0 vN.
apply: QS => //; apply: IH; first exact: par_lt.
exact: ltn_trans (par_lt h) vN.
Qed.


(** ** Tokens and target rows *)
Variable V : finType.             (* the vocabulary *)
Variable tok : nat -> V.          (* token of each non-root node *)
Variable R : realFieldType.       (* an ordered field *)
Variable p : nat -> V -> R.       (* p v = target row at node v *)
Hypothesis p_ge0 : forall v y, (v < N)%N -> 0 <= p v y.
Hypothesis p_sum1 : forall v, (v < N)%N -> \sum_(y : V) p v y = 1.
Hypothesis sib_distinct : forall u1 u2, (0 < u1 < N)%N -> (0 < u2 < N)%N ->
  par u1 = par u2 -> tok u1 = tok u2 -> u1 = u2.

(** ** docs/design.md §1.2, the table *)
(* u is a child of v *)
Definition isch (v u : nat) : bool := (0 < u)%N && (par u == v).
(* edge probability a(u) = p_{par u}(x_u) *)
Definition a (u : nat) : R := p (par u) (tok u).
(* prefix probability: P root = 1, P u = P (par u) * a u  (lemmas P0, PS) *)
Definition P : nat -> R := up 1 (fun u x => x * a u).
(* child mass, exit probability, exit law, coverage, depth *)
Definition m (v : nat) : R := \sum_(u < N | isch v u) a u.
Definition rho (v : nat) : R := 1 - m v.
Definition w (v : nat) : R := P v * rho v.
Definition Cp : R := \sum_(u < N | (0 < u)%N) P u.
Definition depth : nat -> nat := up 0%N (fun _ d => d.+1).
(* the set of child tokens of v *)
Definition ctoks (v : nat) : {set V} :=
  (fun u : 'I_N => tok u) @: [set u : 'I_N | isch v u].
(* p_v with the child tokens of v removed (unnormalised residual) *)
Definition pstop (v : nat) (y : V) : R := if y \in ctoks v then 0 else p v y.
(* block law  Pr[exit = v, bonus = y] = P(v) p_v(y) [y not a child token] *)
Definition block (v : nat) (y : V) : R := P v * pstop v y.
(* residual bonus law p_v^res; when rho v = 0 the field convention x/0 = 0
   gives 0 (the exit v then has probability w v = 0, see block_bonus_is_residual) *)
Definition resid (v : nat) (y : V) : R := pstop v y / rho v.

Lemma par_ltN u : (0 < u < N)%N -> (par u < N)%N.
Proof. by move=> h; case/andP: (h) => _ uN; exact: ltn_trans (par_lt h) uN. Qed.

Lemma P0 : P 0 = 1. Proof. by []. Qed.
Lemma PS u : (0 < u < N)%N -> P u = P (par u) * a u.
Proof. by move=> h; rewrite /P upS. Qed.
Lemma depth0 : depth 0 = 0%N. Proof. by []. Qed.
Lemma depthS u : (0 < u < N)%N -> depth u = (depth (par u)).+1.
Proof. by move=> h; rewrite /depth upS. Qed.

Lemma a_ge0 u : (0 < u < N)%N -> 0 <= a u.
Proof. by move=> h; apply: p_ge0; apply: par_ltN. Qed.

Lemma P_ge0 v : (v < N)%N -> 0 <= P v.
Proof.
move: v; apply: (@node_ind (fun v => 0 <= P v)) => [|u h IH]; first by rewrite P0 ler01.
by rewrite PS // mulr_ge0 // a_ge0.
Qed.

(* sum over the children of v, reindexed by their (distinct) tokens *)
Lemma sum_children_tok v (G : V -> R) :
  \sum_(u < N | isch v u) G (tok u) = \sum_(y in ctoks v) G y.
Proof.
have inj : {in [set u : 'I_N | isch v u] &, injective (fun u : 'I_N => tok u)}.
  move=> u1 u2; rewrite !inE => /andP[h1 /eqP e1] /andP[h2 /eqP e2] et.
  apply: val_inj; apply: sib_distinct => //; first by rewrite h1 ltn_ord.
    by rewrite h2 ltn_ord.
  by rewrite e1 e2.
rewrite /ctoks (big_imset _ inj) /=.
by apply: eq_bigl => u; rewrite inE.
Qed.

Lemma mE v : m v = \sum_(y in ctoks v) p v y.
Proof.
rewrite -sum_children_tok; apply: eq_bigr => u /andP[_ /eqP e].
by rewrite /a e.
Qed.

Lemma rhoE v : (v < N)%N -> rho v = \sum_(y : V) pstop v y.
Proof.
move=> vN; rewrite /rho mE -(p_sum1 vN) (bigID (fun y => y \in ctoks v)) /=.
rewrite addrAC subrr add0r [RHS](bigID (fun y => y \in ctoks v)) /= [X in _ = X + _]big1 ?add0r.
  by apply: eq_bigr => y /negbTE hy; rewrite /pstop hy.
by move=> y hy; rewrite /pstop hy.
Qed.

Lemma pstop_ge0 v y : (v < N)%N -> 0 <= pstop v y.
Proof. by move=> vN; rewrite /pstop; case: ifP => // _; apply: p_ge0. Qed.

Lemma rho_ge0 v : (v < N)%N -> 0 <= rho v.
Proof. by move=> vN; rewrite rhoE // sumr_ge0 // => y _; apply: pstop_ge0. Qed.

Lemma exit_law_nonneg v : (v < N)%N -> 0 <= w v.
Proof. by move=> vN; rewrite /w mulr_ge0 ?P_ge0 ?rho_ge0. Qed.

(* summing over nodes by their parent *)
Lemma sum_by_parent (F : nat -> nat -> R) :
  \sum_(v < N) \sum_(u < N | isch v u) F v u = \sum_(u < N | (0 < u)%N) F (par u) u.
Proof.
under eq_bigr do rewrite big_mkcond /=.
rewrite exchange_big [RHS]big_mkcond /=; apply: eq_bigr => u _.
case: (posnP u) => [u0|u0].
  by rewrite big1 // => v _; rewrite /isch u0.
have h : (0 < u < N)%N by rewrite u0 ltn_ord.
rewrite (bigD1 (Ordinal (par_ltN h))) //= /isch u0 eqxx /= big1 ?addr0 //.
move=> v hv; case: ifP => // /eqP e; move: hv.
by rewrite -val_eqE /= e eqxx.
Qed.

Lemma sum_root (F : nat -> R) :
  \sum_(v < N) F v = F 0%N + \sum_(u < N | (0 < u)%N) F u.
Proof.
rewrite (bigD1 (Ordinal N_gt0)) //=; congr (_ + _).
by apply: eq_bigl => u; rewrite -val_eqE /= lt0n.
Qed.

Lemma Pm v : P v * m v = \sum_(u < N | isch v u) P u.
Proof.
rewrite /m mulr_sumr; apply: eq_bigr => u /andP[u0 /eqP e].
by rewrite (@PS u) ?u0 ?ltn_ord // e.
Qed.

(** ** Theorem 1: conservation -- w >= 0 (exit_law_nonneg) and sum_v w v = 1 *)
Theorem exit_law_sums_to_one : \sum_(v < N) w v = 1.
Proof.
rewrite /w /rho.
under eq_bigr do rewrite mulrBr mulr1.
rewrite sumrB sum_root.
under [X in _ - X]eq_bigr do rewrite Pm.
rewrite (sum_by_parent (fun _ u => P u)).
by rewrite addrK P0.
Qed.

Theorem exit_law_is_distribution :
  (forall v, (v < N)%N -> 0 <= w v) /\ \sum_(v < N) w v = 1.
Proof. by split; [exact: exit_law_nonneg | exact: exit_law_sums_to_one]. Qed.


(** ** Theorem 2: coverage identity  C_p = sum_{v != root} P v = sum_v depth(v) w(v) *)
Theorem coverage_identity : Cp = \sum_(v < N) (depth v)%:R * w v.
Proof.
rewrite /w /rho.
under eq_bigr do rewrite mulrBr mulr1 mulrBr.
rewrite sumrB (sum_root (fun v => (depth v)%:R * P v)) depth0 mul0r add0r.
under [X in _ - X]eq_bigr do rewrite Pm mulr_sumr.
rewrite (sum_by_parent (fun v u => (depth v)%:R * P u)) -sumrB /Cp.
apply: eq_bigr => u h; rewrite depthS ?h ?ltn_ord //.
by rewrite mulrSr mulrDl mul1r addrAC subrr add0r.
Qed.

(** ** Theorem 3: the block law is a distribution whose exit marginal is w and
    whose bonus law given exit v is the residual law *)
Lemma block_law_nonneg v y : (v < N)%N -> 0 <= block v y.
Proof. by move=> vN; rewrite mulr_ge0 ?P_ge0 ?pstop_ge0. Qed.

Theorem block_exit_marginal v : (v < N)%N -> \sum_(y : V) block v y = w v.
Proof. by move=> vN; rewrite /block -mulr_sumr -rhoE. Qed.

Theorem block_sums_to_one : \sum_(v < N) \sum_(y : V) block v y = 1.
Proof.
rewrite -exit_law_sums_to_one; apply: eq_bigr => v _.
exact: block_exit_marginal.
Qed.

Theorem block_law_is_distribution :
  (forall v y, (v < N)%N -> 0 <= block v y) /\
  \sum_(v < N) \sum_(y : V) block v y = 1.
Proof. by split; [exact: block_law_nonneg | exact: block_sums_to_one]. Qed.

Lemma rho0_pstop v y : (v < N)%N -> rho v = 0 -> pstop v y = 0.
Proof.
move=> vN r0; apply: (@psumr_eq0P _ _ xpredT (pstop v)) => //.
  by move=> z _; apply: pstop_ge0.
by rewrite -rhoE.
Qed.

Theorem block_bonus_is_residual v y : (v < N)%N -> block v y = w v * resid v y.
Proof.
move=> vN; rewrite /block /w /resid -mulrA; congr (P v * _).
have [r0|r0] := eqVneq (rho v) 0.
  by rewrite r0 mul0r rho0_pstop.
by rewrite mulrCA divff // mulr1.
Qed.

Theorem residual_is_distribution v : (v < N)%N -> 0 < rho v ->
  (forall y, 0 <= resid v y) /\ \sum_(y : V) resid v y = 1.
Proof.
move=> vN r0; split=> [y|]; first by rewrite divr_ge0 ?pstop_ge0 ?rho_ge0.
by rewrite -mulr_suml -rhoE // divff // lt0r_neq0.
Qed.

(* (TEV, item 6, is its algorithm below: tev_alg.  The law w(v) p_v^res(y) of
   "exit ~ w, then bonus ~ p_v^res" is the block law by block_bonus_is_residual;
   Procedures.v proves TEV exact and saturating as its two draws.) *)

(** ** Tree walks built from one-step kernels.
    At node v a walk either moves to a child u (probability kmove v u) or stops
    with bonus y (probability kstop v y).  Steps at different nodes are
    independent, so the law of (exit node, bonus) of the walk is
    reach(v) * kstop v y, where reach is the product of the move
    probabilities along the path from the root.  If every node's one-step
    kernel moves to child u with probability a(u) and stops with bonus y with
    probability pstop v y, the walk realises the block law (induction over
    the tree). *)
Section Walk.
Variable kmove : nat -> nat -> R.
Variable kstop : nat -> V -> R.
Definition reach : nat -> R := up 1 (fun u r => r * kmove (par u) u).
Definition walk_law (v : nat) (y : V) : R := reach v * kstop v y.

Hypothesis kmove_ok : forall u, (0 < u < N)%N -> kmove (par u) u = a u.
Hypothesis kstop_ok : forall v y, (v < N)%N -> kstop v y = pstop v y.

Lemma reach_prefix v : (v < N)%N -> reach v = P v.
Proof.
move: v; apply: (@node_ind (fun v => reach v = P v)) => // u h IH.
by rewrite /reach upS // -/reach IH kmove_ok // -PS.
Qed.

Theorem walk_realises_block v y : (v < N)%N -> walk_law v y = block v y.
Proof. by move=> vN; rewrite /walk_law reach_prefix // kstop_ok. Qed.
End Walk.

(** ** Theorem 4: predraw-and-follow (DDTree).  At node v draw x ~ p_v; if x is
    the token of a child, move to that child, otherwise stop with bonus x.  The
    one-step kernel is the push-forward of p_v by that decision. *)
Definition pd_next (v : nat) (x : V) : option 'I_N :=
  [pick u : 'I_N | isch v u && (tok u == x)].
Definition pd_move (v u : nat) : R :=
  \sum_(x : V) p v x * (if pd_next v x is Some c then (val c == u)%:R else 0).
Definition pd_stop (v : nat) (y : V) : R :=
  \sum_(x : V) p v x * ((pd_next v x == None) && (x == y))%:R.

Lemma ctoksP v y : reflect (exists2 u : 'I_N, isch v u & tok u = y) (y \in ctoks v).
Proof.
apply: (iffP imsetP) => [[u hu ->]|[u hu <-]]; exists u => //.
  by move: hu; rewrite inE.
by rewrite inE.
Qed.

Lemma pd_next_None v y : (pd_next v y == None) = (y \notin ctoks v).
Proof.
rewrite /pd_next; case: pickP => [u /andP[hu /eqP hy]|none] /=.
  by apply/esym/negbF/ctoksP; exists u.
apply/esym/negP => /ctoksP [u hu hy].
by move: (none u); rewrite hu hy eqxx.
Qed.

Lemma predraw_kernel_move u : (0 < u < N)%N -> pd_move (par u) u = a u.
Proof.
move=> h; rewrite /pd_move (bigD1 (tok u)) //= big1 ?addr0.
  rewrite /pd_next; case: pickP => [c /andP[hc /eqP ht]|none].
    have -> : val c = u.
      apply: sib_distinct => //; first by rewrite (andP hc).1 ltn_ord.
      by rewrite (eqP (andP hc).2).
    by rewrite eqxx mulr1.
  by move: (none (Ordinal (proj2 (andP h)))); rewrite /isch /= (andP h).1 !eqxx.
move=> x hx; rewrite /pd_next; case: pickP => [c /andP[hc /eqP ht]|_].
  case: eqP => [ec|_]; last by rewrite mulr0.
  by move: hx; rewrite -ht ec eqxx.
by rewrite mulr0.
Qed.

Lemma predraw_kernel_stop v y : pd_stop v y = pstop v y.
Proof.
rewrite /pd_stop (bigD1 y) //= big1 ?addr0; last first.
  by move=> x /negbTE hx; rewrite hx andbF mulr0.
by rewrite eqxx andbT pd_next_None /pstop; case: ifP; rewrite ?mulr0 ?mulr1.
Qed.

Theorem predraw_realises_block v y : (v < N)%N ->
  walk_law pd_move pd_stop v y = block v y.
Proof.
move=> vN; apply: walk_realises_block => // [u h|z x _]; first exact: predraw_kernel_move.
exact: predraw_kernel_stop.
Qed.


(** ** Ancestors and subtrees.  anc u v: u is an ancestor of v or v itself,
    i.e. v lies in the subtree of u. *)
Definition anc (u : nat) : nat -> bool := up (u == 0%N) (fun v b => (u == v) || b).

Lemma anc0 u : anc u 0 = (u == 0%N). Proof. by []. Qed.
Lemma ancS u v : (0 < v < N)%N -> anc u v = (u == v) || anc u (par v).
Proof. by move=> h; rewrite /anc upS. Qed.

Lemma anc_le u v : (v < N)%N -> anc u v -> (u <= v)%N.
Proof.
move: v; apply: (@node_ind (fun v => anc u v -> (u <= v)%N)).
  by rewrite anc0 => /eqP ->.
move=> v h IH; rewrite ancS // => /orP[/eqP -> //|/IH hu].
exact: leq_trans hu (ltnW (par_lt h)).
Qed.

Lemma anc_refl v : (v < N)%N -> anc v v.
Proof. by case: (posnP v) => [->|v0] vN //; rewrite ancS ?v0 // eqxx. Qed.

Lemma anc_root v : (v < N)%N -> anc 0 v.
Proof.
move: v; apply: (@node_ind (fun v => anc 0 v)) => // v h IH.
by rewrite ancS // IH orbT.
Qed.

Lemma anc_par_self v : (0 < v < N)%N -> anc v (par v) = false.
Proof.
move=> h; apply/negP => /(anc_le (par_ltN h)); rewrite leqNgt.
by rewrite (par_lt h).
Qed.

(* for 0 < v < N the two cases of ancS are exclusive *)
Lemma ancS_nat u v : (0 < v < N)%N ->
  (anc u v)%:R = (u == v)%:R + (anc u (par v))%:R :> R.
Proof.
move=> h; rewrite ancS //; case: (eqVneq u v) => [->|_] /=.
  by rewrite anc_par_self // addr0.
by rewrite add0r.
Qed.

Lemma depth_count x : (x < N)%N ->
  (depth x)%:R = \sum_(u < N | (0 < u)%N) (anc u x)%:R :> R.
Proof.
move: x; apply: (@node_ind (fun x => (depth x)%:R = \sum_(u < N | (0 < u)%N) (anc u x)%:R :> R)).
  by rewrite depth0 big1 // => u h; rewrite anc0 eqn0Ngt h.
move=> x h IH; rewrite depthS // mulrSr IH.
under [RHS]eq_bigr do rewrite ancS_nat //.
rewrite big_split /= addrC; congr (_ + _).
rewrite (bigD1 (Ordinal (proj2 (andP h)))) /= ?(andP h).1 // eqxx big1 ?addr0 //.
by move=> u /andP[_ hu]; move: hu; rewrite -val_eqE /= => /negbTE ->.
Qed.

Lemma children_anc v x : (x < N)%N ->
  \sum_(c < N | isch v c) (anc c x)%:R = (anc v x && (x != v))%:R :> R.
Proof.
move: x; apply: (@node_ind (fun x => \sum_(c < N | isch v c) (anc c x)%:R
   = (anc v x && (x != v))%:R :> R)).
  rewrite big1 ?anc0; last by move=> c /andP[c0 _]; rewrite anc0 eqn0Ngt c0.
  by case: eqP => // ->.
move=> x h IH.
under eq_bigr => c _ do rewrite ancS_nat //.
rewrite big_split /= IH (@ancS v x h).
have -> : \sum_(c < N | isch v c) ((c : nat) == x)%:R = (par x == v)%:R :> R.
  case: (eqVneq (par x) v) => [e|ne].
    rewrite (bigD1 (Ordinal (proj2 (andP h)))) /=; last by rewrite /isch (andP h).1 e eqxx.
    rewrite eqxx big1 ?addr0 //.
    by move=> c /andP[_ hc]; move: hc; rewrite -val_eqE /= => /negbTE ->.
  rewrite big1 // => c /andP[_ /eqP pc]; case: eqP => // cx.
  by move: ne; rewrite -cx pc eqxx.
case: (eqVneq x v) => [exv|nxv].
  by rewrite -exv anc_par_self // (ltn_eqF (par_lt h)) add0r.
rewrite /= andbT.
case: (eqVneq (par x) v) => [<-|_]; last by rewrite add0r andbT.
by rewrite anc_refl ?par_ltN // andbF addr0.
Qed.

(** ** TEV as its algorithm (paper Algorithm 1).  Prefix probabilities as
    products over the ancestor mask (log P = A @ log a), child mass from the
    child-incidence matrix (m = C a), exit weights w = P (1 - m), one draw of
    the exit node from w, one draw of the bonus from the exit row with the
    child tokens masked out and renormalised.  The law of the two draws is
    exit weight * bonus weight; it is the block law. *)
Definition Pmask (v : nat) : R := \prod_(u < N | (0 < u)%N && anc u v) a u.
Definition mC (v : nat) : R := \sum_(u < N) (isch v u)%:R * a u.
Definition wtev (v : nat) : R := Pmask v * (1 - mC v).
Definition bonus_draw (v : nat) (y : V) : R := pstop v y / \sum_(z : V) pstop v z.
Definition tev_alg (v : nat) (y : V) : R := wtev v * bonus_draw v y.

(* ancestor-mask products are the prefix
   probabilities, C a is the child mass, and the two draws have the block law *)
Lemma Pmask_P v : (v < N)%N -> Pmask v = P v.
Proof.
move: v; apply: (@node_ind (fun v => Pmask v = P v)).
  rewrite /Pmask big1 // => u /andP[u0]; rewrite anc0 => /eqP hu.
  by rewrite hu in u0.
move=> v h IH; rewrite PS // -IH /Pmask (bigD1 (Ordinal (proj2 (andP h)))) /=; last first.
  by rewrite (andP h).1 anc_refl // (proj2 (andP h)).
rewrite mulrC; congr (_ * _); apply: eq_bigl => u.
rewrite (ancS _ h) -val_eqE /=.
case: (eqVneq (val u) v) => [e|ne] /=; last by rewrite andbT.
by rewrite andbF e anc_par_self // andbF.
Qed.

Lemma mC_m v : mC v = m v.
Proof.
rewrite /mC /m [RHS]big_mkcond; apply: eq_bigr => u _.
by case: (isch v u); rewrite ?mul1r ?mul0r.
Qed.

Theorem tev_algorithm_realises_block v y : (v < N)%N -> tev_alg v y = block v y.
Proof.
move=> vN; rewrite block_bonus_is_residual // /tev_alg /wtev Pmask_P // mC_m.
by rewrite /bonus_draw -rhoE.
Qed.

Theorem tev_exit_draw_is_exit_law v : (v < N)%N -> wtev v = w v.
Proof. by move=> vN; rewrite /wtev Pmask_P // mC_m. Qed.

Definition subtree_mass (mu : nat -> R) (u : nat) : R := \sum_(x < N | anc u x) mu x.

Lemma subtree_massE mu u : subtree_mass mu u = \sum_(x < N) (anc u x)%:R * mu x.
Proof.
rewrite /subtree_mass big_mkcond; apply: eq_bigr => x _.
by case: (anc u x); rewrite ?mul1r ?mul0r.
Qed.

(* the exit node lies at u or in exactly one child subtree of u *)
Lemma subtree_decomp mu v : (v < N)%N ->
  subtree_mass mu v = mu v + \sum_(c < N | isch v c) subtree_mass mu c.
Proof.
move=> vN.
under [X in _ = _ + X]eq_bigr do rewrite subtree_massE.
rewrite exchange_big /=.
under [X in _ = _ + X]eq_bigr do rewrite -mulr_suml children_anc //.
rewrite subtree_massE (bigD1 (Ordinal vN)) //= [X in _ = _ + X](bigD1 (Ordinal vN)) //=.
rewrite anc_refl // eqxx /= mul0r add0r mul1r; congr (_ + _).
apply: eq_bigr => x hx; move: hx; rewrite -val_eqE /= => /negbTE ->.
by rewrite andbT.
Qed.

Lemma mean_depth (mu : nat -> R) :
  \sum_(v < N) mu v * (depth v)%:R = \sum_(u < N | (0 < u)%N) subtree_mass mu u.
Proof.
under eq_bigr => x _ do rewrite depth_count // mulr_sumr.
rewrite exchange_big /=; apply: eq_bigr => u _.
by rewrite subtree_massE; apply: eq_bigr => x _; rewrite mulrC.
Qed.

(** The exit law enters the subtree of every node u with probability P u. *)
Theorem exit_law_subtree_mass u : (u < N)%N -> subtree_mass w u = P u.
Proof.
move=> uN; rewrite subtree_massE /w /rho.
under eq_bigr do rewrite mulrBr mulr1 mulrBr.
rewrite sumrB (sum_root (fun x => (anc u x)%:R * P x)) anc0.
under [X in _ - X]eq_bigr do rewrite Pm mulr_sumr.
rewrite (sum_by_parent (fun x c => (anc u x)%:R * P c)) -addrA -sumrB.
under eq_bigr => c h do rewrite ancS_nat ?h ?ltn_ord // mulrDl addrK.
case: (posnP u) => [->|u0].
  by rewrite big1 ?addr0 ?eqxx ?mul1r // => c h; rewrite eq_sym eqn0Ngt h mul0r.
rewrite (bigD1 (Ordinal uN)) //= eqxx mul1r big1 ?addr0.
  by rewrite mul0r add0r.
by move=> c /andP[_ hc]; move: hc; rewrite -val_eqE eq_sym /= => /negbTE ->; rewrite mul0r.
Qed.

(** ** Theorem 7: the fixed-tree ceiling.
    mu is the law of the exit node (deepest accepted node) of any verifier
    on this tree.  Exactness hypothesis: for every non-root node u, the
    probability that the exit lies in u's subtree (i.e. that the emitted
    block starts with the path tokens of u) is at most P u, the target
    probability of that prefix.  Expected block length = sum mu(v) (1 + depth v). *)
Section Ceiling.
Variable mu : nat -> R.
Hypothesis mu_sum1 : \sum_(v < N) mu v = 1.
Hypothesis exact_subtree : forall u, (0 < u < N)%N -> subtree_mass mu u <= P u.

Theorem fixed_tree_ceiling :
  \sum_(v < N) mu v * (1 + (depth v)%:R) <= 1 + Cp.
Proof.
under eq_bigr do rewrite mulrDr mulr1.
rewrite big_split /= mu_sum1 mean_depth ler_add2l /Cp.
by apply: ler_sum => u h; apply: exact_subtree; rewrite h ltn_ord.
Qed.

Theorem fixed_tree_ceiling_equality :
  \sum_(v < N) mu v * (1 + (depth v)%:R) = 1 + Cp <->
  (forall v, (v < N)%N -> mu v = w v).
Proof.
split=> [heq|hw]; last first.
  under eq_bigr => v _ do rewrite hw //.
  under eq_bigr do rewrite mulrDr mulr1.
  rewrite big_split /= exit_law_sums_to_one coverage_identity.
  by congr (1 + _); apply: eq_bigr => v _; rewrite mulrC.
move: heq; under eq_bigr do rewrite mulrDr mulr1.
rewrite big_split /= mu_sum1 mean_depth => /addrI /eqP.
rewrite /Cp -subr_eq0 -sumrB => /eqP hsum.
have hS : forall u, (u < N)%N -> subtree_mass mu u = P u.
  move=> u uN; case: (posnP u) => [->|u0].
    rewrite P0 -mu_sum1 /subtree_mass; apply: eq_bigl => x.
    by rewrite anc_root.
  have hsum' : \sum_(i < N | (0 < i)%N) (P i - subtree_mass mu i) = 0.
    rewrite (eq_bigr (fun i : 'I_N => - (subtree_mass mu i - P i))).
      by rewrite sumrN hsum oppr0.
    by move=> i _; rewrite opprB.
  apply/eqP; rewrite eq_sym -subr_eq0; apply/eqP.
  apply: (@psumr_eq0P _ _ (fun i : 'I_N => (0 < i)%N)
            (fun i : 'I_N => P i - subtree_mass mu i) _ hsum' (Ordinal uN)) => //.
  by move=> x x0; rewrite subr_ge0 exact_subtree // x0 ltn_ord.
move=> v vN; have := subtree_decomp mu vN.
rewrite hS // => e.
rewrite -[mu v](addrK (\sum_(c < N | isch v c) subtree_mass mu c)) -e.
rewrite /w /rho mulrBr mulr1 Pm; congr (_ - _).
by apply: eq_bigr => c /andP[c0 _]; rewrite hS.
Qed.
End Ceiling.


(** ** Theorem 5: sequential residual verification (docs/design.md §1.6 form, the tree's
    children are deterministic).  At node v, with the children listed in any
    order l and r := p_v: accept child c with probability r(x_c); on rejection
    set r(x_c) := 0 and renormalise (rmask); if all children are rejected,
    stop with bonus ~ r.  sr_move r l u / sr_stop r l y is the probability of
    moving to child u / stopping with bonus y. *)
Definition rmask (r : V -> R) (x : V) : V -> R :=
  fun y => if y == x then 0 else r y / (1 - r x).

Fixpoint sr_move (r : V -> R) (l : seq nat) (u : nat) : R :=
  if l is c :: l' then
    (if c == u then r (tok c) else 0) + (1 - r (tok c)) * sr_move (rmask r (tok c)) l' u
  else 0.

Fixpoint sr_stop (r : V -> R) (l : seq nat) (y : V) : R :=
  if l is c :: l' then (1 - r (tok c)) * sr_stop (rmask r (tok c)) l' y else r y.

Lemma distr_pair (r : V -> R) x y : (forall z, 0 <= r z) -> \sum_(z : V) r z = 1 ->
  y != x -> r y + r x <= 1.
Proof.
move=> r0 r1 yx; rewrite -r1 (bigD1 x) //= (bigD1 y) //= addrA [r x + _]addrC.
by rewrite ler_addl sumr_ge0.
Qed.

Lemma distr_le1 (r : V -> R) x : (forall z, 0 <= r z) -> \sum_(z : V) r z = 1 -> r x <= 1.
Proof.
move=> r0 r1; rewrite -r1 (bigD1 x) //= ler_addl sumr_ge0 //.
Qed.

Lemma rmask_distr (r : V -> R) x : (forall z, 0 <= r z) -> \sum_(z : V) r z = 1 ->
  r x != 1 -> (forall z, 0 <= rmask r x z) /\ \sum_(z : V) rmask r x z = 1.
Proof.
move=> r0 r1 rx1; have hx : 0 < 1 - r x.
  by rewrite subr_gt0 lt_neqAle rx1 distr_le1.
split=> [z|]; first by rewrite /rmask; case: ifP => // _; rewrite divr_ge0 // ltW.
rewrite (bigD1 x) //= /rmask eqxx add0r.
have e : 1 - r x = \sum_(z | z != x) r z.
  by rewrite -r1 (bigD1 x) //= addrC addKr.
rewrite -[X in _ = X](@divff _ (1 - r x)) ?lt0r_neq0 //.
rewrite [X in _ = X / _]e mulr_suml; apply: eq_bigr => z /negbTE ->.
by [].
Qed.

Lemma sr_kernel_gen (l : seq nat) : forall r : V -> R,
  uniq l -> {in l &, injective tok} ->
  (forall z, 0 <= r z) -> \sum_(z : V) r z = 1 ->
  (forall u, sr_move r l u = if u \in l then r (tok u) else 0) /\
  (forall y, sr_stop r l y = if y \in map tok l then 0 else r y).
Proof.
elim: l => [|c l IH] r /=; first by [].
move=> /andP[cl ul] inj r0 r1.
have injl : {in l &, injective tok}.
  by move=> u1 u2 h1 h2; apply: inj; rewrite inE ?h1 ?h2 orbT.
have tokne : forall u, u \in l -> tok u != tok c.
  move=> u ul'; apply/negP => /eqP e.
  have uc : u = c by apply: inj; rewrite ?inE ?ul' ?eqxx ?orbT.
  by move: cl; rewrite -uc ul'.
case: (eqVneq (r (tok c)) 1) => [rc1|rc1].
  have r0' : forall y, y != tok c -> r y = 0.
    move=> y yc; apply/eqP; rewrite eq_le r0 andbT.
    by have := distr_pair r0 r1 yc; rewrite rc1 ger_addr.
  rewrite rc1 subrr; split=> [u|y]; rewrite mul0r ?addr0 ?inE.
    case: (eqVneq c u) => [<-|cu] /=; first by rewrite rc1.
    by case: ifP => // ul'; rewrite r0' // tokne.
  case: (eqVneq y (tok c)) => [//|yc] /=.
  by case: ifP => // _; rewrite r0'.
have [r0m r1m] := rmask_distr r0 r1 rc1.
have [IHm IHs] := IH _ ul injl r0m r1m.
have hne : 1 - r (tok c) != 0 by rewrite subr_eq0 eq_sym.
split=> [u|y].
  rewrite IHm inE; case: (eqVneq c u) => [<-|cu].
    by rewrite (negbTE cl) mulr0 addr0.
  rewrite add0r /=; case: ifP => [ul'|_]; last by rewrite mulr0.
  by rewrite /rmask (negbTE (tokne _ ul')) mulrCA divff // mulr1.
rewrite IHs inE; case: (eqVneq y (tok c)) => [->|yc] /=.
  by case: ifP => _; rewrite /rmask ?eqxx mulr0.
case: ifP => _; first by rewrite mulr0.
by rewrite /rmask (negbTE yc) mulrCA divff // mulr1.
Qed.

Lemma sr_move_notin r l u : u \notin l -> sr_move r l u = 0.
Proof.
elim: l r => [|c l IH] r //=; rewrite inE negb_or => /andP[cu ul].
by rewrite eq_sym (negbTE cu) add0r IH // mulr0.
Qed.

(* "l lists the children of v, each once, in some order" *)
Definition child_order (v : nat) (l : seq nat) : Prop :=
  uniq l /\ forall u, (u \in l) = (0 < u < N)%N && (par u == v).

Theorem seqres_kernel v l : (v < N)%N -> child_order v l ->
  (forall u, sr_move (p v) l u =
             if (0 < u < N)%N && (par u == v) then a u else 0) /\
  (forall y, sr_stop (p v) l y = pstop v y).
Proof.
move=> vN [ul hl].
have inj : {in l &, injective tok}.
  move=> u1 u2; rewrite !hl => /andP[h1 /eqP e1] /andP[h2 /eqP e2] et.
  by apply: sib_distinct; rewrite ?e1 ?e2.
have [hm hs] := sr_kernel_gen ul inj (fun z => p_ge0 z vN) (p_sum1 vN).
split=> [u|y]; first by rewrite hm hl; case: ifP => // /andP[_ /eqP <-].
rewrite hs /pstop; congr (if _ then _ else _); apply/mapP/ctoksP.
  move=> [u ul' ->]; move: ul'; rewrite hl => /andP[/andP[u0 uN] pu].
  by exists (Ordinal uN); rewrite //= /isch u0.
move=> [u /andP[u0 pu] <-]; exists (val u) => //.
by rewrite hl u0 ltn_ord.
Qed.

Corollary seqres_kernel_order_independent v l1 l2 : (v < N)%N ->
  child_order v l1 -> child_order v l2 ->
  (forall u, sr_move (p v) l1 u = sr_move (p v) l2 u) /\
  (forall y, sr_stop (p v) l1 y = sr_stop (p v) l2 y).
Proof.
move=> vN h1 h2; have [m1 s1] := seqres_kernel vN h1.
have [m2 s2] := seqres_kernel vN h2.
by split=> [u|y]; rewrite ?m1 ?m2 ?s1 ?s2.
Qed.

Theorem seqres_realises_block (order : nat -> seq nat) v y :
  (forall v, (v < N)%N -> child_order v (order v)) -> (v < N)%N ->
  walk_law (fun v u => sr_move (p v) (order v) u)
           (fun v y => sr_stop (p v) (order v) y) v y = block v y.
Proof.
move=> hord vN; apply: walk_realises_block => // [u h|z x zN].
  have pN := par_ltN h.
  by have [-> _] := seqres_kernel pN (hord _ pN); rewrite h eqxx.
by have [_ ->] := seqres_kernel zN (hord _ zN).
Qed.


(** ** Theorem 7, joint form (the paper's statement).  J v y is the law of
    (exit node, bonus token) of any verifier.  The emitted block starts with
    the path tokens of v followed by y exactly when (exit = v and bonus = y)
    or the exit lies in the subtree of the child c of v with token y.
    Exactness: that event has probability at most P(v) p_v(y), the target
    probability of the prefix path(v).y.  Then E[L] <= 1 + C_p, with
    equality iff J is the block law. *)
Section JointCeiling.
Variable J : nat -> V -> R.
Hypothesis J_ge0 : forall v y, (v < N)%N -> 0 <= J v y.
Hypothesis J_sum1 : \sum_(v < N) \sum_(y : V) J v y = 1.
Definition exit_marginal (v : nat) : R := \sum_(y : V) J v y.
Hypothesis exact_block : forall v y, (v < N)%N ->
  J v y + \sum_(c < N | isch v c && (tok c == y)) subtree_mass exit_marginal c
  <= P v * p v y.

Lemma exit_marginal_ge0 v : (v < N)%N -> 0 <= exit_marginal v.
Proof. by move=> vN; apply: sumr_ge0 => y _; apply: J_ge0. Qed.

Lemma subtree_marginal_ge0 u : 0 <= subtree_mass exit_marginal u.
Proof. by apply: sumr_ge0 => x _; apply: exit_marginal_ge0. Qed.

Lemma exact_block_subtree u : (0 < u < N)%N -> subtree_mass exit_marginal u <= P u.
Proof.
move=> h; have pN := par_ltN h; have := exact_block (tok u) pN.
rewrite -/(a u) -PS //; apply: le_trans.
rewrite (bigD1 (Ordinal (proj2 (andP h)))) /=; last by rewrite /isch (andP h).1 !eqxx.
rewrite addrCA ler_addl addr_ge0 ?J_ge0 //.
by apply: sumr_ge0 => c _; apply: subtree_marginal_ge0.
Qed.

Lemma joint_mean_length :
  \sum_(v < N) \sum_(y : V) J v y * (1 + (depth v)%:R)
  = \sum_(v < N) exit_marginal v * (1 + (depth v)%:R).
Proof. by apply: eq_bigr => v _; rewrite mulr_suml. Qed.

Theorem fixed_tree_ceiling_joint :
  \sum_(v < N) \sum_(y : V) J v y * (1 + (depth v)%:R) <= 1 + Cp.
Proof.
rewrite joint_mean_length; apply: fixed_tree_ceiling => //.
exact: exact_block_subtree.
Qed.

Theorem fixed_tree_ceiling_joint_equality :
  \sum_(v < N) \sum_(y : V) J v y * (1 + (depth v)%:R) = 1 + Cp <->
  (forall v y, (v < N)%N -> J v y = block v y).
Proof.
rewrite joint_mean_length.
have hceil := fixed_tree_ceiling_equality J_sum1 exact_block_subtree.
split=> [/hceil hw v y vN|hJ]; last first.
  by apply/hceil => v vN; rewrite -block_exit_marginal // /exit_marginal;
     apply: eq_bigr => y _; rewrite hJ.
have hS : forall u, (u < N)%N -> subtree_mass exit_marginal u = P u.
  move=> u uN; rewrite -exit_law_subtree_mass //.
  by apply: eq_bigr => x _; rewrite hw.
have hle : forall z, J v z <= block v z.
  move=> z; have := exact_block z vN; rewrite /block /pstop.
  case: ifP => [/ctoksP [c hc hcz]|hz].
    rewrite mulr0 (bigD1 c) /=; last by rewrite hc hcz eqxx.
    have hcN : (0 < c < N)%N by rewrite (andP hc).1 ltn_ord.
    rewrite hS ?ltn_ord // -hcz -(eqP (andP hc).2) -/(a c) -PS // addrCA.
    rewrite ger_addl -ler_subr_addr add0r => h; apply: le_trans h _.
    by rewrite oppr_le0 sumr_ge0 // => c' _; apply: subtree_marginal_ge0.
  rewrite big_pred0 ?addr0 // => c; apply/negP => /andP[hc /eqP hcz].
  by move/negP: hz; apply; apply/ctoksP; exists c.
have hsum : \sum_(z : V) (block v z - J v z) = 0.
  by rewrite sumrB block_exit_marginal // -hw // subrr.
apply/eqP; rewrite eq_sym -subr_eq0; apply/eqP.
by apply: (psumr_eq0P _ hsum) => // z _; rewrite subr_ge0.
Qed.
End JointCeiling.


(** The EAGLE-form step (accept x with min(1, r(x)/q(x)); on rejection
    continue with norm((r - q)+)) with the draft row q equal to the point mass
    at the proposed child token is exactly the step used by sr_move/sr_stop. *)
Definition eagle_accept (r q : V -> R) (x : V) : R := Num.min 1 (r x / q x).
Definition eagle_residual (r q : V -> R) : V -> R :=
  fun y => Num.max 0 (r y - q y) / \sum_(z : V) Num.max 0 (r z - q z).
Definition point_mass (x : V) : V -> R := fun y => (y == x)%:R.

Lemma eagle_step_point_mass (r : V -> R) x :
  (forall z, 0 <= r z) -> \sum_(z : V) r z = 1 ->
  eagle_accept r (point_mass x) x = r x /\
  (forall y, eagle_residual r (point_mass x) y = rmask r x y).
Proof.
move=> r0 r1; have rx1 := distr_le1 x r0 r1.
have hmax : forall y, Num.max 0 (r y - point_mass x y) = if y == x then 0 else r y.
  move=> y; rewrite /point_mass; case: eqP => [->|_].
    by rewrite max_l // subr_le0.
  by rewrite subr0 max_r.
split; first by rewrite /eagle_accept /point_mass eqxx divr1 min_r.
move=> y; rewrite /eagle_residual /rmask hmax.
have -> : \sum_(z : V) Num.max 0 (r z - point_mass x z) = 1 - r x.
  rewrite -r1 (bigD1 x) //= hmax eqxx add0r [X in _ = X - _](bigD1 x) //=.
  rewrite addrC addKr; apply: eq_bigr => z /negbTE zx.
  by rewrite hmax zx.
by case: eqP => _; rewrite ?mul0r.
Qed.


(* The sequential residual kernel written in the EAGLE form, the draft row of
   the j-th proposal being the point mass at the j-th child's token. *)
Fixpoint eagle_move (r : V -> R) (l : seq nat) (u : nat) : R :=
  if l is c :: l' then
    (if c == u then eagle_accept r (point_mass (tok c)) (tok c) else 0) +
    (1 - eagle_accept r (point_mass (tok c)) (tok c)) *
      eagle_move (eagle_residual r (point_mass (tok c))) l' u
  else 0.

Fixpoint eagle_stop (r : V -> R) (l : seq nat) (y : V) : R :=
  if l is c :: l' then
    (1 - eagle_accept r (point_mass (tok c)) (tok c)) *
      eagle_stop (eagle_residual r (point_mass (tok c))) l' y
  else r y.

Lemma sr_ext (r1 r2 : V -> R) l : r1 =1 r2 ->
  (forall u, sr_move r1 l u = sr_move r2 l u) /\
  (forall y, sr_stop r1 l y = sr_stop r2 l y).
Proof.
elim: l r1 r2 => [|c l IH] r1 r2 e /=; first by split=> // y; rewrite e.
have em : rmask r1 (tok c) =1 rmask r2 (tok c) by move=> y; rewrite /rmask !e.
have [IHm IHs] := IH _ _ em.
by split=> [u|y]; rewrite e ?IHm ?IHs.
Qed.

Lemma eagle_is_sr (l : seq nat) : forall r : V -> R,
  (forall z, 0 <= r z) -> \sum_(z : V) r z = 1 ->
  (forall u, eagle_move r l u = sr_move r l u) /\
  (forall y, eagle_stop r l y = sr_stop r l y).
Proof.
elim: l => [|c l IH] r r0 r1 //=.
have [ha hres] := eagle_step_point_mass (tok c) r0 r1.
rewrite ha; case: (eqVneq (r (tok c)) 1) => [->|rc1].
  by rewrite subrr; split=> [u|y]; rewrite !mul0r.
have [r0m r1m] := rmask_distr r0 r1 rc1.
have r0e : forall z, 0 <= eagle_residual r (point_mass (tok c)) z.
  by move=> z; rewrite hres.
have r1e : \sum_(z : V) eagle_residual r (point_mass (tok c)) z = 1.
  by rewrite -r1m; apply: eq_bigr => z _; rewrite hres.
have [IHm IHs] := IH _ r0e r1e.
have [Em Es] := sr_ext l hres.
by split=> [u|y]; rewrite ?IHm ?IHs ?Em ?Es.
Qed.

Theorem eagle_seqres_realises_block (order : nat -> seq nat) v y :
  (forall v, (v < N)%N -> child_order v (order v)) -> (v < N)%N ->
  walk_law (fun v u => eagle_move (p v) (order v) u)
           (fun v y => eagle_stop (p v) (order v) y) v y = block v y.
Proof.
move=> hord vN; rewrite -(seqres_realises_block y hord vN) /walk_law.
have [_ ->] := eagle_is_sr (order v) (fun z => p_ge0 z vN) (p_sum1 vN).
congr (_ * _); rewrite /reach.
move: v vN; apply: (@node_ind (fun v => up 1 (fun u r => r * eagle_move (p (par u)) (order (par u)) u) v = up 1 (fun u r => r * sr_move (p (par u)) (order (par u)) u) v)) => // u h IH.
rewrite [LHS]upS // [RHS]upS // IH; congr (_ * _).
have pN := par_ltN h.
by have [-> _] := eagle_is_sr (order (par u)) (fun z => p_ge0 z pN) (p_sum1 pN).
Qed.

End Tree.
