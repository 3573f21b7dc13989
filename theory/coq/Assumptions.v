(* Prints the axioms each main theorem depends on; every one must report
   "Closed under the global context" (no axiom, no admitted lemma).
   property_tests/theory/test_coq_proofs.py checks the same list.  (A section
   Hypothesis is not an axiom: it shows up as a premise of the statement, which
   Statements.v pins.) *)
From mathcomp Require Import all_ssreflect all_algebra.
From ExitLaw Require Import ExitLaw Target Exactness Procedures Residual Rounds Example.

Goal True. idtac "@@ exit_law_is_distribution". Abort.
Print Assumptions exit_law_is_distribution.
Goal True. idtac "@@ coverage_identity". Abort.
Print Assumptions coverage_identity.
Goal True. idtac "@@ block_law_is_distribution". Abort.
Print Assumptions block_law_is_distribution.
Goal True. idtac "@@ block_exit_marginal". Abort.
Print Assumptions block_exit_marginal.
Goal True. idtac "@@ block_bonus_is_residual". Abort.
Print Assumptions block_bonus_is_residual.
Goal True. idtac "@@ residual_is_distribution". Abort.
Print Assumptions residual_is_distribution.
Goal True. idtac "@@ predraw_kernel_move". Abort.
Print Assumptions predraw_kernel_move.
Goal True. idtac "@@ predraw_kernel_stop". Abort.
Print Assumptions predraw_kernel_stop.
Goal True. idtac "@@ predraw_realises_block". Abort.
Print Assumptions predraw_realises_block.
Goal True. idtac "@@ seqres_kernel". Abort.
Print Assumptions seqres_kernel.
Goal True. idtac "@@ seqres_kernel_order_independent". Abort.
Print Assumptions seqres_kernel_order_independent.
Goal True. idtac "@@ seqres_realises_block". Abort.
Print Assumptions seqres_realises_block.
Goal True. idtac "@@ eagle_step_point_mass". Abort.
Print Assumptions eagle_step_point_mass.
Goal True. idtac "@@ eagle_seqres_realises_block". Abort.
Print Assumptions eagle_seqres_realises_block.
Goal True. idtac "@@ tev_algorithm_realises_block". Abort.
Print Assumptions tev_algorithm_realises_block.
Goal True. idtac "@@ tev_exit_draw_is_exit_law". Abort.
Print Assumptions tev_exit_draw_is_exit_law.
Goal True. idtac "@@ exit_law_subtree_mass". Abort.
Print Assumptions exit_law_subtree_mass.
Goal True. idtac "@@ fixed_tree_ceiling". Abort.
Print Assumptions fixed_tree_ceiling.
Goal True. idtac "@@ fixed_tree_ceiling_equality". Abort.
Print Assumptions fixed_tree_ceiling_equality.
Goal True. idtac "@@ fixed_tree_ceiling_joint". Abort.
Print Assumptions fixed_tree_ceiling_joint.
Goal True. idtac "@@ fixed_tree_ceiling_joint_equality". Abort.
Print Assumptions fixed_tree_ceiling_joint_equality.
Goal True. idtac "@@ canonical_space". Abort.
Print Assumptions canonical_space.
Goal True. idtac "@@ target_exit_law". Abort.
Print Assumptions target_exit_law.
Goal True. idtac "@@ target_block_law". Abort.
Print Assumptions target_block_law.
Goal True. idtac "@@ bounded_ceiling". Abort.
Print Assumptions bounded_ceiling.
Goal True. idtac "@@ bounded_ceiling_equality". Abort.
Print Assumptions bounded_ceiling_equality.
Goal True. idtac "@@ coupled_ceiling". Abort.
Print Assumptions coupled_ceiling.
Goal True. idtac "@@ coupled_ceiling_equality". Abort.
Print Assumptions coupled_ceiling_equality.
Goal True. idtac "@@ coupled_saturates_iff_target_law". Abort.
Print Assumptions coupled_saturates_iff_target_law.
Goal True. idtac "@@ follow_prefix". Abort.
Print Assumptions follow_prefix.
Goal True. idtac "@@ follow_law". Abort.
Print Assumptions follow_law.
Goal True. idtac "@@ follow_saturates". Abort.
Print Assumptions follow_saturates.
Goal True. idtac "@@ root_prefix". Abort.
Print Assumptions root_prefix.
Goal True. idtac "@@ root_length". Abort.
Print Assumptions root_length.
Goal True. idtac "@@ tev_coupling". Abort.
Print Assumptions tev_coupling.
Goal True. idtac "@@ coupling_exact". Abort.
Print Assumptions coupling_exact.
Goal True. idtac "@@ exact_prefix_form". Abort.
Print Assumptions exact_prefix_form.
Goal True. idtac "@@ exact_prefix_bound". Abort.
Print Assumptions exact_prefix_bound.
Goal True. idtac "@@ exact_verifier_ceiling". Abort.
Print Assumptions exact_verifier_ceiling.
Goal True. idtac "@@ exact_verifier_ceiling_equality". Abort.
Print Assumptions exact_verifier_ceiling_equality.
Goal True. idtac "@@ block_law_exact". Abort.
Print Assumptions block_law_exact.
Goal True. idtac "@@ exact_saturating_iff_block_law". Abort.
Print Assumptions exact_saturating_iff_block_law.
Goal True. idtac "@@ follow_coupled". Abort.
Print Assumptions follow_coupled.
Goal True. idtac "@@ follow_stopping_time". Abort.
Print Assumptions follow_stopping_time.
Goal True. idtac "@@ follow_exact". Abort.
Print Assumptions follow_exact.
Goal True. idtac "@@ follow_saturates_exact". Abort.
Print Assumptions follow_saturates_exact.
Goal True. idtac "@@ root_exact". Abort.
Print Assumptions root_exact.
Goal True. idtac "@@ walk_law_block". Abort.
Print Assumptions walk_law_block.
Goal True. idtac "@@ walk_exact". Abort.
Print Assumptions walk_exact.
Goal True. idtac "@@ walk_saturates". Abort.
Print Assumptions walk_saturates.
Goal True. idtac "@@ predraw_law". Abort.
Print Assumptions predraw_law.
Goal True. idtac "@@ predraw_exact". Abort.
Print Assumptions predraw_exact.
Goal True. idtac "@@ predraw_saturates". Abort.
Print Assumptions predraw_saturates.
Goal True. idtac "@@ tev_law_block". Abort.
Print Assumptions tev_law_block.
Goal True. idtac "@@ tev_exact". Abort.
Print Assumptions tev_exact.
Goal True. idtac "@@ tev_saturates". Abort.
Print Assumptions tev_saturates.
Goal True. idtac "@@ residual_law". Abort.
Print Assumptions residual_law.
Goal True. idtac "@@ residual_exact". Abort.
Print Assumptions residual_exact.
Goal True. idtac "@@ residual_saturates". Abort.
Print Assumptions residual_saturates.
Goal True. idtac "@@ rounds_law". Abort.
Print Assumptions rounds_law.
Goal True. idtac "@@ rounds_autoregressive". Abort.
Print Assumptions rounds_autoregressive.
Goal True. idtac "@@ ex_exit_law_is_distribution". Abort.
Print Assumptions ex_exit_law_is_distribution.
Goal True. idtac "@@ ex_target_exit_law". Abort.
Print Assumptions ex_target_exit_law.
Goal True. idtac "@@ ex_target_block_law". Abort.
Print Assumptions ex_target_block_law.
Goal True. idtac "@@ ex_follow_prefix". Abort.
Print Assumptions ex_follow_prefix.
Goal True. idtac "@@ ex_follow_saturates". Abort.
Print Assumptions ex_follow_saturates.
Goal True. idtac "@@ ex_follow_ceiling". Abort.
Print Assumptions ex_follow_ceiling.
Goal True. idtac "@@ ex_follow_block_law". Abort.
Print Assumptions ex_follow_block_law.
Goal True. idtac "@@ ex_root_prefix". Abort.
Print Assumptions ex_root_prefix.
Goal True. idtac "@@ ex_root_ceiling". Abort.
Print Assumptions ex_root_ceiling.
Goal True. idtac "@@ ex_root_strict". Abort.
Print Assumptions ex_root_strict.
Goal True. idtac "@@ ex_tev_coupling". Abort.
Print Assumptions ex_tev_coupling.
Goal True. idtac "@@ ex_follow_exact". Abort.
Print Assumptions ex_follow_exact.
Goal True. idtac "@@ ex_follow_exact_saturates". Abort.
Print Assumptions ex_follow_exact_saturates.
Goal True. idtac "@@ ex_root_exact". Abort.
Print Assumptions ex_root_exact.
Goal True. idtac "@@ ex_predraw_exact". Abort.
Print Assumptions ex_predraw_exact.
Goal True. idtac "@@ ex_predraw_saturates". Abort.
Print Assumptions ex_predraw_saturates.
Goal True. idtac "@@ ex_tev_exact". Abort.
Print Assumptions ex_tev_exact.
Goal True. idtac "@@ ex_tev_saturates". Abort.
Print Assumptions ex_tev_saturates.
Goal True. idtac "@@ ex_residual_exact". Abort.
Print Assumptions ex_residual_exact.
Goal True. idtac "@@ ex_residual_saturates". Abort.
Print Assumptions ex_residual_saturates.
Goal True. idtac "@@ ex_rounds_law". Abort.
Print Assumptions ex_rounds_law.
Goal True. idtac "@@ ex_anticipating_coupled". Abort.
Print Assumptions ex_anticipating_coupled.
Goal True. idtac "@@ ex_anticipating_not_stopping_time". Abort.
Print Assumptions ex_anticipating_not_stopping_time.
Goal True. idtac "@@ ex_anticipating_completed". Abort.
Print Assumptions ex_anticipating_completed.
Goal True. idtac "@@ ex_anticipating_not_exact". Abort.
Print Assumptions ex_anticipating_not_exact.
Goal True. idtac "@@ ex_sampled_exact_on_average". Abort.
Print Assumptions ex_sampled_exact_on_average.
Goal True. idtac "@@ ex_sampled_conditionally_exceeds". Abort.
Print Assumptions ex_sampled_conditionally_exceeds.
