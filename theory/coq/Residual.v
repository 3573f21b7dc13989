(* ========================================================================= *)
(*  exitlaw: sequential residual verification (EAGLE-style, paper A.4.2) as  *)
(*  a random procedure on independent draws.                                 *)
(*                                                                           *)
(*  At node v, with the children in the order l = order v and r := p_v:     *)
(*  test the children one by one; child c is accepted with probability       *)
(*  beta_c = r(x_c) where r is the residual row at that point; on rejection  *)
(*  r := rmask r x_c (x_c's mass removed, renormalised); if every child is   *)
(*  rejected, stop with a bonus token drawn from the final residual row.     *)
(*  The draws at v: N coins (coin j decides the j-th tested child, weight   *)
(*  bern beta_j; coins past the last child have beta = 0) and the bonus      *)
(*  token, all independent (sr_dw); the draws at different nodes are         *)
(*  independent (Procedures.draws_w).  residual_law: the walk's (exit,       *)
(*  bonus) law on this product space is the block law, for every choice of   *)
(*  child orders; residual_exact, residual_saturates.                        *)
(* ========================================================================= *)

From mathcomp Require Import all_ssreflect all_algebra.
From ExitLaw Require Import ExitLaw Target Exactness Procedures.
Set Implicit Arguments. Unset Strict Implicit. Unset Printing Implicit Defensive.
Import GRing.Theory Num.Theory Order.POrderTheory.
Local Open Scope ring_scope.

Section Residual.

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
Variable order : nat -> seq nat.     (* the order in which v's children are tested *)
Hypothesis horder : forall v, (v < N)%N -> child_order N par v (order v).

Local Notation p := (prow par tok q).
Local Notation blockt := (block N par tok p).
Local Notation Cpt := (Cp N par tok p).

(** ** One node's procedure *)
Definition bern (beta : R) (x : bool) : R := if x then beta else 1 - beta.

(* the acceptance probabilities of the children, in testing order *)
Fixpoint sr_betas (r : V -> R) (l : seq nat) : seq R :=
  if l is c :: l' then r (tok c) :: sr_betas (rmask r (tok c)) l' else [::].
(* the residual row after every child is rejected *)
Fixpoint sr_final (r : V -> R) (l : seq nat) : V -> R :=
  if l is c :: l' then sr_final (rmask r (tok c)) l' else r.
(* the weight of a coin sequence: coin j ~ bern (j-th beta), 0 past the last *)
Fixpoint coins_w (bs : seq R) (t : seq bool) : R :=
  if t is x :: t' then bern (head 0 bs) x * coins_w (behead bs) t' else 1.
(* the first child whose coin comes up true *)
Fixpoint sr_accept (l : seq nat) (t : seq bool) : option nat :=
  if l is c :: l' then (if t is x :: t' then (if x then Some c else sr_accept l' t') else None)
  else None.

(* the bonus row: the final residual (p_v itself where the residual is degenerate,
   which happens only when rejecting every child has probability 0) *)
Definition sr_row (v : nat) : V -> R :=
  if \sum_(z : V) sr_final (p v) (order v) z == 1 then sr_final (p v) (order v) else p v.

(* the draw at node v: N coins and a bonus token, independent *)
Definition sr_dw (v : nat) (x : N.-tuple bool * V) : R :=
  coins_w (sr_betas (p v) (order v)) x.1 * sr_row v x.2.
Definition sr_step (v : nat) (x : N.-tuple bool * V) : option 'I_N :=
  if sr_accept (order v) x.1 is Some c then
    (if (0 < c < N)%N && (par c == v) then Some (insubd (root N_gt0) c) else None)
  else None.
Definition sr_bonus (v : nat) (x : N.-tuple bool * V) : V := x.2.
Definition residual_ex := walk_ex N_gt0 sr_step.
Definition residual_b := walk_b N_gt0 sr_step sr_bonus.

(** ** The coins *)
Lemma bern_sum b : bern b true + bern b false = 1.
Proof. by rewrite /bern addrC subrK. Qed.

Lemma coins_sum1 n bs : \sum_(t : n.-tuple bool) coins_w bs t = 1.
Proof.
elim: n bs => [|n IH] bs; first by rewrite sum_tuple0.
rewrite sum_tuple_cons big_bool /= -!mulr_sumr !IH !mulr1.
exact: bern_sum.
Qed.

Definition dz (r : V -> R) : Prop :=
  (forall z, 0 <= r z) /\ (\sum_(z : V) r z = 1 \/ forall z, r z = 0).

Lemma dz_le1 r z : dz r -> 0 <= r z <= 1.
Proof.
case=> r0 [r1|rz]; first by rewrite r0 (distr_le1 _ r0 r1).
by rewrite rz lexx ler01.
Qed.

Lemma rmask_dz r x : dz r -> dz (rmask r x).
Proof.
case=> r0 [r1|rz].
  have [rx1|rx1] := eqVneq (r x) 1.
    split=> [z|]; last by right=> z; rewrite /rmask rx1 subrr invr0 mulr0; case: ifP.
    by rewrite /rmask rx1 subrr invr0 mulr0; case: ifP.
  by have [h1 h2] := rmask_distr r0 r1 rx1; split=> //; left.
split=> [z|]; last by right=> z; rewrite /rmask rz; case: ifP; rewrite ?mul0r.
by rewrite /rmask rz; case: ifP; rewrite ?mul0r.
Qed.

Lemma betas_ok r l : dz r -> forall j, 0 <= nth 0 (sr_betas r l) j <= 1.
Proof.
elim: l r => [|c l IH] r hr j; first by rewrite nth_nil lexx ler01.
by case: j => [|j] /=; [apply: dz_le1 | apply: IH; apply: rmask_dz].
Qed.

Lemma coins_w_ge0 bs t : (forall j, 0 <= nth 0 bs j <= 1) -> 0 <= coins_w bs t.
Proof.
elim: t bs => [|x t IH] bs hb /=; first exact: ler01.
apply: mulr_ge0; last by apply: IH => j; rewrite nth_behead.
have := hb 0%N; rewrite nth0 /bern => /andP[h0 h1].
by case: x; rewrite ?subr_ge0.
Qed.

(* moving to child u *)
Lemma coins_move r l u n : (size l <= n)%N ->
  \sum_(t : n.-tuple bool) coins_w (sr_betas r l) t * (sr_accept l t == Some u)%:R =
  sr_move tok r l u.
Proof.
elim: l r n => [|c l IH] r n hn.
  by apply: big1 => t _; rewrite /=; case: (val t) => [|x t'] /=; rewrite mulr0.
case: n hn => [|n] hn //; rewrite sum_tuple_cons big_bool /=.
congr (_ + _).
  under eq_bigr => t _ do rewrite -mulrA.
  rewrite -mulr_sumr (_ : (Some c == Some u) = (c == u)) //.
  rewrite -mulr_suml coins_sum1 mul1r.
  by case: (c == u); rewrite ?mulr1 ?mulr0.
under eq_bigr => t _ do rewrite -mulrA.
by rewrite -mulr_sumr IH.
Qed.

(* every child rejected, then the bonus *)
Fixpoint sr_rej (r : V -> R) (l : seq nat) : R :=
  if l is c :: l' then (1 - r (tok c)) * sr_rej (rmask r (tok c)) l' else 1.

Lemma coins_stop r l n : (size l <= n)%N ->
  \sum_(t : n.-tuple bool) coins_w (sr_betas r l) t * (sr_accept l t == None)%:R =
  sr_rej r l.
Proof.
elim: l r n => [|c l IH] r n hn /=.
  rewrite -[RHS](coins_sum1 n [::]); apply: eq_bigr => t _.
  by case: (val t) => [|x t'] /=; rewrite mulr1.
case: n hn => [|n] hn //; rewrite sum_tuple_cons big_bool /= big1 ?add0r => [|t _]; last by rewrite mulr0.
under eq_bigr => t _ do rewrite -mulrA.
by rewrite -mulr_sumr IH.
Qed.

Lemma sr_stop_rej r l y : sr_stop tok r l y = sr_rej r l * sr_final r l y.
Proof. by elim: l r => [|c l IH] r /=; rewrite ?mul1r // IH mulrA. Qed.

Lemma rej_degenerate r l : dz r -> \sum_(z : V) r z = 1 ->
  sr_rej r l = 0 \/ \sum_(z : V) sr_final r l z = 1.
Proof.
elim: l r => [|c l IH] r hr r1 /=; first by right.
have [rc1|rc1] := eqVneq (r (tok c)) 1; first by left; rewrite rc1 subrr mul0r.
have [h0 h1] := rmask_distr hr.1 r1 rc1.
case: (IH _ (rmask_dz (tok c) hr) h1) => [->|]; [by left; rewrite mulr0 | by right].
Qed.

Lemma accept_mem l t c : sr_accept l t = Some c -> c \in l.
Proof.
elim: l t => [|c' l IH] [|x t] //=.
by case: x => [[<-]|/IH h]; rewrite inE ?eqxx ?h ?orbT.
Qed.

(** ** The node draws meet the walk's hypotheses *)
Lemma p_dz v : dz (p v).
Proof. by split=> [z|]; [apply: q_ge0 | left; apply: q_sum1]. Qed.

Lemma sr_row_ge0 v y : 0 <= sr_row v y.
Proof.
rewrite /sr_row; case: ifP => _; last exact: q_ge0.
have [h _] := (fix f l r (hr : dz r) {struct l} : dz (sr_final r l) :=
  match l return dz (sr_final r l) with
  | [::] => hr
  | c :: l' => f l' _ (rmask_dz (tok c) hr)
  end) (order v) (p v) (p_dz v).
exact: h.
Qed.

Lemma sr_row_sum1 v : \sum_(y : V) sr_row v y = 1.
Proof. by rewrite /sr_row; case: ifP => [/eqP|_] //; apply: q_sum1. Qed.

Lemma sum_pair (F : N.-tuple bool * V -> R) :
  \sum_x F x = \sum_(t : N.-tuple bool) \sum_(y : V) F (t, y).
Proof.
rewrite (eq_bigr (fun x => F (x.1, x.2))); last by case.
by rewrite -(pair_bigA _ (fun t y => F (t, y))).
Qed.

Lemma sr_dw_ge0 v x : (v < N)%N -> 0 <= sr_dw v x.
Proof.
move=> _; rewrite /sr_dw mulr_ge0 ?sr_row_ge0 //.
by apply: coins_w_ge0; apply: betas_ok; apply: p_dz.
Qed.

Lemma sr_dw_sum1 v : (v < N)%N -> \sum_x sr_dw v x = 1.
Proof.
move=> _; rewrite sum_pair /sr_dw.
under eq_bigr => t _ do rewrite -mulr_sumr sr_row_sum1 mulr1.
exact: coins_sum1.
Qed.

Lemma sr_step_child v x c : sr_step v x = Some c -> isch par v c.
Proof.
rewrite /sr_step; case: (sr_accept _ _) => [c'|] //.
case: ifP => // /andP[/andP[c0 cN] pc] [<-].
by rewrite /isch val_insubd cN c0.
Qed.

Lemma order_size v : (v < N)%N -> (size (order v) <= N)%N.
Proof.
move=> vN; have [ul hl] := horder vN.
rewrite -(size_iota 0 N); apply: uniq_leq_size => // c; rewrite hl mem_iota add0n.
by case/andP=> /andP[_ ->].
Qed.

Lemma sr_step_accept v x : (v < N)%N ->
  omap val (sr_step v x) = sr_accept (order v) x.1.
Proof.
move=> vN; rewrite /sr_step; case e: (sr_accept _ _) => [c|] //.
have [_ hl] := horder vN; have := accept_mem e; rewrite hl => /andP[/andP[c0 cN] pc].
by rewrite c0 cN pc /= val_insubd cN.
Qed.

Lemma sr_kmove u : (0 < u < N)%N ->
  \sum_x sr_dw (par u) x * (omap val (sr_step (par u) x) == Some u)%:R = a par tok p u.
Proof.
move=> h; have pN := par_ltN par_lt h.
have [hm _] := seqres_kernel (p := p) (fun v y _ => q_ge0 _ y) (fun v _ => q_sum1 _)
  sib_distinct pN (horder pN).
rewrite sum_pair (eq_bigr (fun t : N.-tuple bool =>
    coins_w (sr_betas (p (par u)) (order (par u))) t *
    (sr_accept (order (par u)) t == Some u)%:R)); last first.
  move=> t _; under eq_bigr => y _ do rewrite sr_step_accept //= /sr_dw /= mulrAC.
  by rewrite -mulr_sumr sr_row_sum1 mulr1.
by rewrite coins_move ?order_size // hm h eqxx.
Qed.

Lemma sr_kstop v y : (v < N)%N ->
  \sum_x sr_dw v x * ((sr_step v x == None) && (sr_bonus v x == y))%:R =
  pstop N par tok p v y.
Proof.
move=> vN.
have [_ hs] := seqres_kernel (p := p) (fun v y _ => q_ge0 _ y) (fun v _ => q_sum1 _)
  sib_distinct vN (horder vN).
rewrite -hs sr_stop_rej sum_pair.
rewrite (eq_bigr (fun t : N.-tuple bool =>
    coins_w (sr_betas (p v) (order v)) t * (sr_accept (order v) t == None)%:R *
    sr_row v y)); last first.
  move=> t _; rewrite (bigD1 y) //= big1 ?addr0 => [|z hz]; last first.
    by rewrite /sr_bonus /= eq_sym (negbTE hz) andbF mulr0.
  rewrite /sr_dw /sr_bonus /= eqxx andbT -mulrA [_ * (_ == _)%:R]mulrC mulrA.
  congr (_ * (nat_of_bool _)%:R * _).
  have := sr_step_accept (t, y) vN; rewrite /=.
  by case: (sr_step v (t, y)); case: (sr_accept _ _).
rewrite -mulr_suml coins_stop ?order_size // /sr_row.
case: ifP => // hne; case: (rej_degenerate (order v) (p_dz v) (q_sum1 _)) => [->|h1].
  by rewrite !mul0r.
by move: hne; rewrite h1 eqxx.
Qed.

(** ** Sequential residual on independent draws: block law, exact, saturating *)
Theorem residual_law v y : (v < N)%N ->
  vlaw (draws_w sr_dw) residual_ex residual_b v y = blockt v y.
Proof.
by move=> vN; apply: (walk_law_block N_gt0 par_lt sr_dw_sum1 sr_step_child sr_kmove sr_kstop).
Qed.

Theorem residual_exact : exact par tok q H (draws_w sr_dw) residual_ex residual_b.
Proof.
exact: (walk_exact N_gt0 par_lt sib_distinct N_le_H sr_dw_sum1 sr_step_child sr_kmove sr_kstop).
Qed.

Theorem residual_saturates : EL par (draws_w sr_dw) residual_ex = 1 + Cpt.
Proof.
exact: (walk_saturates N_gt0 par_lt sib_distinct q_ge0 q_sum1 sr_dw_ge0 sr_dw_sum1
          sr_step_child sr_kmove sr_kstop).
Qed.

End Residual.
