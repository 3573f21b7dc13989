"""exitlaw.engine (see DESIGN.md section 2)."""
