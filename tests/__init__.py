"""minipulsar's tests (tests/README.md says where each kind of test lives). ROOT is the checkout."""
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
