"""exitlaw.paper_repro (see DESIGN.md section 2)."""
