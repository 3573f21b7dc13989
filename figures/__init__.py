"""exitlaw.figures (see DESIGN.md section 2)."""
