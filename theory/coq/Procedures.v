(* ========================================================================= *)
(*  exitlaw: the verifiers as random procedures (paper A.4, B.1).            *)
(*                                                                           *)
(*  Tree walks on a product space of independent per-node draws.  Every     *)
(*  node v carries its own draw d_v in a finite set D with law dw v (the     *)
(*  draws at different nodes are independent: the space is {ffun 'I_N -> D} *)
(*  with product weight prod_v dw v (d v)).  From the root, the walk reads   *)
(*  the draw of the node it is at and either moves to a child (step) or      *)
(*  stops there with a bonus token.  walk_law_block: if every node's draw    *)
(*  moves to child u with probability a(u) and stops with bonus y with       *)
(*  probability p_v(y) [y not a child token], the (exit, bonus) law of the  *)
(*  walk, computed on the product space, is the block law.                   *)
(*                                                                           *)
(*  Predraw-and-follow (DDTree, A.4.1): d_v = R_v ~ p_v, move to the child   *)
(*  whose token is R_v, else stop with bonus R_v.  predraw_exact,           *)
(*  predraw_saturates: exact (Exactness.exact) and E[L] = 1 + C_p.           *)
(*                                                                           *)
(*  TEV (Algorithm 1, B.1): its two draws, the exit node V ~ wtev (ancestor- *)
(*  mask products, m = C a) and then the bonus Y ~ the exit's masked row;    *)
(*  the space is the pairs (V, Y) with weight wtev V * bonus_draw V Y.       *)
(*  tev_exact, tev_saturates.                                                *)
(* ========================================================================= *)

From mathcomp Require Import all_ssreflect all_algebra.
From ExitLaw Require Import ExitLaw Target Exactness.
Set Implicit Arguments. Unset Strict Implicit. Unset Printing Implicit Defensive.
Import GRing.Theory Num.Theory Order.POrderTheory.
Local Open Scope ring_scope.

Section Procedures.

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

Local Notation p := (prow par tok q).
Local Notation blockt := (block N par tok p).
Local Notation Cpt := (Cp N par tok p).
Local Notation ae := (a par tok p).
Local Notation ancp := (anc par).

Definition root : 'I_N := Ordinal N_gt0.

Lemma val_insubd_lt v : (v < N)%N -> val (insubd root v) = v.
Proof. by move=> vN; rewrite val_insubd vN. Qed.

(* ancestors of a node form a chain; two of them with the same parent coincide *)
Lemma anc_chain v : (v < N)%N -> forall u1 u2, ancp u1 v -> ancp u2 v ->
  ancp u1 u2 || ancp u2 u1.
Proof.
move: v; apply: (@node_ind N par par_lt (fun v => forall u1 u2, ancp u1 v -> ancp u2 v ->
  ancp u1 u2 || ancp u2 u1)).
  by move=> u1 u2; rewrite !anc0 => /eqP -> /eqP ->; rewrite anc0 eqxx.
move=> v h IH u1 u2; rewrite !(ancS par_lt _ h).
have vN := proj2 (andP h).
case/orP=> [/eqP e1|h1]; case/orP=> [/eqP e2|h2].
- by rewrite e1 e2 (anc_refl par_lt vN).
- by rewrite e1 (ancS par_lt _ h) h2 orbT orbT.
- by rewrite e2 (ancS par_lt _ h) h1 orbT.
- exact: IH.
Qed.

Lemma anc_same_parent v u1 u2 : (v < N)%N -> (0 < u1 < N)%N -> (0 < u2 < N)%N ->
  ancp u1 v -> ancp u2 v -> par u1 = par u2 -> u1 = u2.
Proof.
move=> vN h1 h2 a1 a2 e; case/orP: (anc_chain vN a1 a2) => hc.
  move: hc; rewrite (ancS par_lt _ h2) -e (anc_par_self par_lt h1) orbF.
  by move/eqP.
by move: hc; rewrite (ancS par_lt _ h1) e (anc_par_self par_lt h2) orbF => /eqP.
Qed.

(** ** A walk on independent per-node draws *)
Section DrawWalk.
Variable D : finType.                    (* what is drawn at one node *)
Variable dw : nat -> D -> R.             (* its law at node v *)
Variable step : nat -> D -> option 'I_N. (* move to a child, or stop (None) *)
Variable bonus : nat -> D -> V.          (* the bonus token when stopping *)

Definition draws_w (d : {ffun 'I_N -> D}) : R := \prod_(v < N) dw v (d v).

Fixpoint twalk (k : nat) (d : {ffun 'I_N -> D}) (v : 'I_N) : 'I_N :=
  if k is k'.+1 then (if step v (d v) is Some c then twalk k' d c else v) else v.
Definition walk_ex (d : {ffun 'I_N -> D}) : 'I_N := twalk N d root.
Definition walk_b (d : {ffun 'I_N -> D}) : V := bonus (walk_ex d) (d (walk_ex d)).

Hypothesis dw_ge0 : forall v x, (v < N)%N -> 0 <= dw v x.
Hypothesis dw_sum1 : forall v, (v < N)%N -> \sum_(x : D) dw v x = 1.
Hypothesis step_child : forall v x c, step v x = Some c -> isch par v c.
Hypothesis kmove : forall u, (0 < u < N)%N ->
  \sum_(x : D) dw (par u) x * (omap val (step (par u) x) == Some u)%:R = ae u.
Hypothesis kstop : forall v y, (v < N)%N ->
  \sum_(x : D) dw v x * ((step v x == None) && (bonus v x == y))%:R = pstop N par tok p v y.

Lemma draws_w_ge0 d : 0 <= draws_w d.
Proof. by apply: prodr_ge0 => v _; apply: dw_ge0. Qed.

Lemma draws_w_sum1 : \sum_d draws_w d = 1.
Proof.
rewrite /draws_w -(bigA_distr_bigA (fun (v : 'I_N) (x : D) => dw v x)) /=.
by apply: big1 => v _; apply: dw_sum1.
Qed.

(* the draw at node u sends the walk from par u to u *)
Definition okd (d : {ffun 'I_N -> D}) (u : nat) : bool :=
  omap val (step (par u) (d (insubd root (par u)))) == Some u.
(* the walk reaches v: every non-root ancestor-or-self of v is entered *)
Definition reached (d : {ffun 'I_N -> D}) (v : nat) : bool :=
  [forall u : 'I_N, ((0 < u)%N && ancp u v) ==> okd d u].

Lemma reached0 d : reached d 0.
Proof. by apply/forallP => u; rewrite anc0; case: (val u) => //. Qed.

Lemma reachedS d u : (0 < u < N)%N -> reached d u = reached d (par u) && okd d u.
Proof.
move=> h; have uN := proj2 (andP h); apply/forallP/andP => [hr|[/forallP hr hu] x].
  split; first apply/forallP => x.
    by apply/implyP => /andP[x0 hx]; have := hr x; rewrite x0 (ancS par_lt _ h) hx orbT.
  by have := hr (Ordinal uN); rewrite /= (andP h).1 (anc_refl par_lt uN).
apply/implyP => /andP[x0]; rewrite (ancS par_lt _ h) => /orP[/eqP ->|hx] //.
by have := hr x; rewrite x0 hx.
Qed.

Lemma twalk_stop (d : {ffun 'I_N -> D}) k (v : 'I_N) : step v (d v) = None -> twalk k d v = v.
Proof. by case: k => //= k ->. Qed.

Lemma twalk_reached d v : (v < N)%N -> reached d v -> forall k, (depth par v <= k)%N ->
  twalk k d root = twalk (k - depth par v) d (insubd root v).
Proof.
move: v; apply: (@node_ind N par par_lt (fun v => reached d v ->
  forall k, (depth par v <= k)%N -> twalk k d root = twalk (k - depth par v) d (insubd root v))).
  move=> _ k _; rewrite subn0 (_ : insubd root 0%N = root) //.
  by apply: ord_inj; rewrite val_insubd_lt.
move=> u h IH; rewrite (reachedS _ h) => /andP[hr hu] k hk.
rewrite (depthS par_lt h) in hk *.
rewrite (IH hr k (ltnW hk)).
have -> : (k - depth par (par u))%N = (k - (depth par (par u)).+1).+1.
  by rewrite subnS prednK // subn_gt0.
move: hu; rewrite /okd /= val_insubd_lt ?(par_ltN par_lt h) //.
case: (step (par u) (d (insubd root (par u)))) => [c|] //= /eqP [ec].
rewrite (_ : insubd root u = c) //.
by apply: ord_inj; rewrite val_insubd_lt ?(andP h).2.
Qed.

Lemma twalk_inv d k (u : 'I_N) : reached d u ->
  reached d (twalk k d u) /\
  (step (twalk k d u) (d (twalk k d u)) = None \/
   depth par (twalk k d u) = (depth par u + k)%N).
Proof.
elim: k u => [|k IH] u hr /=; first by split=> //; right; rewrite addn0.
case e: (step u (d u)) => [c|]; last by split=> //; left.
have /andP[c0 /eqP pc] := step_child e.
have hc : (0 < c < N)%N by rewrite c0 ltn_ord.
have rc : reached d c.
  rewrite (reachedS _ hc) pc hr /okd pc.
  by rewrite (_ : insubd root u = u) ?e /= ?eqxx //; apply: ord_inj; rewrite val_insubd_lt ?ltn_ord.
have [r1 r2] := IH c rc; split=> //; case: r2 => [->|->]; [by left | right].
by rewrite (depthS par_lt hc) pc addSnnS.
Qed.

Lemma walk_ex_char d (v : 'I_N) :
  (walk_ex d == v) = reached d v && (step v (d v) == None).
Proof.
apply/eqP/andP => [<-|[hr /eqP hs]].
  have [r1 [->|hd]] := @twalk_inv d N root (reached0 d); first by split.
  have := depth_le par_lt (ltn_ord (walk_ex d)).
  rewrite /walk_ex hd /= add0n => hle.
  by have := leq_ltn_trans hle (ltn_ord (twalk N d root)); rewrite ltnn.
have hk : (depth par v <= N)%N.
  by apply: leq_trans (depth_le par_lt (ltn_ord v)) (ltnW (ltn_ord v)).
rewrite /walk_ex (twalk_reached (ltn_ord v) hr hk) (_ : insubd root v = v).
  exact: twalk_stop.
by apply: ord_inj; rewrite val_insubd_lt.
Qed.

(* the event {exit = v, bonus = y} as a cylinder: a condition on each node's draw *)
Definition cyl (v : nat) (y : V) (w : 'I_N) (x : D) : bool :=
  [forall u : 'I_N, ((0 < u)%N && ancp u v && (par u == w)) ==> (omap val (step w x) == Some (val u))]
  && ((val w == v) ==> (step w x == None) && (bonus w x == y)).

Lemma event_cyl d (v : 'I_N) y :
  (walk_ex d == v) && (walk_b d == y) = [forall w : 'I_N, cyl v y w (d w)].
Proof.
rewrite /walk_b; case: (eqVneq (walk_ex d) v) => [e|ne] /=.
  rewrite e; move/eqP: e; rewrite walk_ex_char => /andP[hr hs].
  apply/eqP/forallP => [eb w|hc].
    apply/andP; split.
      apply/forallP => u; apply/implyP => /andP[/andP[u0 hu] /eqP pu].
      have := forallP hr u; rewrite u0 hu /okd /= pu.
      by rewrite (_ : insubd root w = w) //; apply: ord_inj; rewrite val_insubd_lt.
    apply/implyP => /eqP ev; have -> : w = v by apply: ord_inj.
    by rewrite hs eb eqxx.
  by have /andP[_ /implyP/(_ (eqxx _))/andP[_ /eqP]] := hc v.
apply/esym/negbTE/forallP => hc; case/negP: ne; rewrite walk_ex_char.
have := hc v; rewrite /cyl eqxx /= => /andP[_ /andP[-> _]]; rewrite andbT.
apply/forallP => u; apply/implyP => /andP[u0 hu].
have pN : (par u < N)%N by apply: (par_ltN par_lt); rewrite u0 ltn_ord.
have := forallP (andP (hc (Ordinal pN))).1 u; rewrite u0 hu eqxx /= /okd.
by rewrite (_ : insubd root (par u) = Ordinal pN) //; apply: ord_inj; rewrite val_insubd_lt.
Qed.

Lemma cyl_factor (v : 'I_N) y (w : 'I_N) :
  \sum_(x : D) dw w x * (cyl v y w x)%:R =
  (if val w == v then pstop N par tok p v y else 1) *
  \prod_(u < N | (0 < u)%N && ancp u v && (par u == w)) ae u.
Proof.
have none_v : forall u : 'I_N, (0 < u)%N -> ancp u v -> par u == val w -> val w != v.
  move=> u u0 hu /eqP pu; apply/eqP => ewv.
  have h : (0 < u < N)%N by rewrite u0 ltn_ord.
  have := anc_le par_lt (ltn_ord v) hu; rewrite -ewv -pu leqNgt.
  by rewrite (par_lt h).
case: (pickP (fun u : 'I_N => (0 < u)%N && ancp u v && (par u == w))) => [u0 hu0|none].
  have /andP[/andP[u00 hu0a] /eqP pu0] := hu0.
  have hwv := none_v u0 u00 hu0a (introT eqP pu0); rewrite (negbTE hwv) mul1r.
  rewrite (big_pred1 u0) => [|u]; last first.
    apply/idP/eqP => [/andP[/andP[u1 ha] /eqP pu]|->]; last exact: hu0.
    apply: ord_inj; apply: (@anc_same_parent v) => //; rewrite ?u1 ?u00 ?ltn_ord //.
    by rewrite pu pu0.
  have h0 : (0 < u0 < N)%N by rewrite u00 ltn_ord.
  rewrite -kmove // pu0; apply: eq_bigr => x _; congr (_ * (nat_of_bool _)%:R).
  rewrite /cyl (negbTE hwv) andbT; apply/idP/idP => [/forallP/(_ u0)|hx].
    by rewrite hu0.
  apply/forallP => u; apply/implyP => /andP[/andP[u1 ha] /eqP pu].
  suff -> : u = u0 by [].
  apply: ord_inj; apply: (@anc_same_parent v) => //; rewrite ?u1 ?u00 ?ltn_ord //.
  by rewrite pu pu0.
rewrite [X in _ = _ * X]big_pred0 // mulr1; case: ifP => [/eqP ewv|hwv].
  rewrite -(kstop y (ltn_ord v)); apply: eq_bigr => x _; rewrite -ewv.
  congr (_ * (nat_of_bool _)%:R); rewrite /cyl eqxx /=.
  rewrite (_ : [forall u, _] = true) //; apply/forallP => u; apply/implyP => hu.
  by have := none u; rewrite /= -ewv hu.
rewrite -[RHS](dw_sum1 (ltn_ord w)); apply: eq_bigr => x _.
rewrite /cyl hwv andbT (_ : [forall u, _] = true) ?mulr1 //.
apply/forallP => u; apply/implyP => hu.
by have := none u; rewrite hu.
Qed.

Theorem walk_law_block v y : (v < N)%N -> vlaw draws_w walk_ex walk_b v y = blockt v y.
Proof.
move=> vN; pose v' := Ordinal vN.
rewrite /vlaw /Pr (eq_bigr (fun d : {ffun 'I_N -> D} => \prod_(w < N) (dw w (d w) * (cyl v y w (d w))%:R)));
  last first.
  move=> d _; rewrite big_split /=; congr (_ * _).
  rewrite (_ : v = val v') // event_cyl.
  case: (boolP [forall w, _]) => [/forallP hc|/forallPn [w hw]].
    by rewrite big1 // => w _; rewrite hc.
  by rewrite (bigD1 w) //= (negbTE hw) mul0r.
rewrite -(bigA_distr_bigA (fun (w : 'I_N) (x : D) => dw w x * (cyl v y w x)%:R)) /=.
rewrite (eq_bigr _ (fun w _ => cyl_factor v' y w)) big_split /=.
rewrite (bigD1 v') //= eqxx big1 ?mulr1 => [|w hw]; last first.
  by rewrite ifN //; apply: contra hw => /eqP e; apply/eqP; apply: ord_inj.
rewrite /block mulrC -(Pmask_P par_lt tok p vN) /Pmask; congr (_ * _).
under eq_bigr => w _ do rewrite big_mkcond /=.
rewrite exchange_big /= [RHS]big_mkcond /=; apply: eq_bigr => u _.
case: (boolP ((0 < u)%N && ancp u v)) => hu /=; last first.
  by rewrite big1_eq.
have pN : (par u < N)%N by apply: (par_ltN par_lt); rewrite (andP hu).1 ltn_ord.
rewrite (bigD1 (Ordinal pN)) //= eqxx big1 ?mulr1 // => w hw.
by case: eqP => // e; case/eqP: hw; apply: ord_inj.
Qed.

Theorem walk_exact : exact par tok q H draws_w walk_ex walk_b.
Proof.
apply: (block_law_exact N_gt0 par_lt sib_distinct N_le_H).
by move=> v y vN; apply: walk_law_block.
Qed.

Theorem walk_saturates : EL par draws_w walk_ex = 1 + Cpt.
Proof.
have := exact_saturating_iff_block_law N_gt0 par_lt sib_distinct q_ge0 q_sum1 (leqnn N)
          draws_w_ge0 draws_w_sum1 walk_ex walk_b.
by case=> _ /(_ walk_law_block) [].
Qed.
End DrawWalk.

(** ** Predraw-and-follow (DDTree): at every node draw R_v ~ p_v independently;
    from the root follow the child whose token is R_v, else stop with bonus R_v *)
Definition pd_dw (v : nat) (x : V) : R := p v x.
Definition pd_step (v : nat) (x : V) : option 'I_N := pd_next N par tok v x.
Definition pd_bonus (v : nat) (x : V) : V := x.
Definition predraw_ex := walk_ex pd_step.
Definition predraw_b := walk_b pd_step pd_bonus.

Lemma pd_hyps :
  [/\ forall v x c, pd_step v x = Some c -> isch par v c,
      forall u, (0 < u < N)%N ->
        \sum_(x : V) pd_dw (par u) x * (omap val (pd_step (par u) x) == Some u)%:R = ae u
    & forall v y, (v < N)%N ->
        \sum_(x : V) pd_dw v x * ((pd_step v x == None) && (pd_bonus v x == y))%:R =
        pstop N par tok p v y].
Proof.
split=> [v x c e|u h|v y _].
- by have [h [pc _]] := pd_next_some e; rewrite /isch pc eqxx (andP h).1.
- rewrite -(predraw_kernel_move p sib_distinct h); apply: eq_bigr => x _.
  by rewrite /pd_step; case: (pd_next _ _ _ _ _) => [c|] //=; rewrite mulr0.
- by rewrite -(predraw_kernel_stop N par tok p v y).
Qed.

Theorem predraw_law v y : (v < N)%N ->
  vlaw (draws_w pd_dw) predraw_ex predraw_b v y = blockt v y.
Proof.
have [hs hm hst] := pd_hyps.
by move=> vN; apply: walk_law_block => // u _; apply: q_sum1.
Qed.

Theorem predraw_exact : exact par tok q H (draws_w pd_dw) predraw_ex predraw_b.
Proof.
have [hs hm hst] := pd_hyps.
by apply: walk_exact => // u _; apply: q_sum1.
Qed.

Theorem predraw_saturates : EL par (draws_w pd_dw) predraw_ex = 1 + Cpt.
Proof.
have [hs hm hst] := pd_hyps.
by apply: (walk_saturates (bonus := pd_bonus)) => // [u x _|u _]; [apply: q_ge0 | apply: q_sum1].
Qed.

(** ** TEV as its two draws: exit V ~ wtev, then bonus Y ~ bonus_draw V *)
Definition tev_nu (o : 'I_N * V) : R := tev_alg N par tok p o.1 o.2.
Definition tev_ex (o : 'I_N * V) : 'I_N := o.1.
Definition tev_b (o : 'I_N * V) : V := o.2.

Lemma p_ge0' v y : (v < N)%N -> 0 <= p v y. Proof. by move=> _; apply: q_ge0. Qed.
Lemma p_sum1' v : (v < N)%N -> \sum_(y : V) p v y = 1. Proof. by move=> _; apply: q_sum1. Qed.

Lemma tev_nu_block o : tev_nu o = blockt o.1 o.2.
Proof. exact: (tev_algorithm_realises_block par_lt p_ge0' p_sum1' sib_distinct). Qed.

Lemma tev_nu_ge0 o : 0 <= tev_nu o.
Proof.
rewrite tev_nu_block.
exact: (proj1 (block_law_is_distribution N_gt0 par_lt p_ge0' p_sum1' sib_distinct)).
Qed.

Lemma tev_nu_sum1 : \sum_o tev_nu o = 1.
Proof.
rewrite -(block_sums_to_one N_gt0 par_lt p_sum1' sib_distinct) pair_bigA /=.
by apply: eq_bigr => -[v y] _; exact: tev_nu_block.
Qed.

Theorem tev_law_block v y : (v < N)%N -> vlaw tev_nu tev_ex tev_b v y = blockt v y.
Proof.
move=> vN; rewrite /vlaw /Pr (bigD1 (Ordinal vN, y)) //= !eqxx mulr1 big1 ?addr0.
  by rewrite tev_nu_block.
move=> [w z] /= hne; case: (boolP ((val w == v) && (z == y))) => [/andP[/eqP e /eqP ez]|];
  last by rewrite mulr0.
by case/eqP: hne; rewrite ez; congr pair; apply: ord_inj.
Qed.

Theorem tev_exact : exact par tok q H tev_nu tev_ex tev_b.
Proof.
apply: (block_law_exact N_gt0 par_lt sib_distinct N_le_H).
exact: tev_law_block.
Qed.

Theorem tev_saturates : EL par tev_nu tev_ex = 1 + Cpt.
Proof.
have := exact_saturating_iff_block_law N_gt0 par_lt sib_distinct q_ge0 q_sum1 (leqnn N)
          tev_nu_ge0 tev_nu_sum1 tev_ex tev_b.
by case=> _ /(_ tev_law_block) [].
Qed.

End Procedures.
