"""exitlaw.paper_repro (see DESIGN.md section 2)."""

# --- mini-scale reproduction on the stdlib corpus (issue 6); torch is imported only when run
from .mini import PRESETS as MINI_PRESETS, MiniConfig, run_mini
from .mini_corpus import CorpusSplit, load_tokenizer, make_split, train_tokenizer
