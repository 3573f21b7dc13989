"""exitlaw.simulate (see DESIGN.md section 2)."""
