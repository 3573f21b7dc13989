"""Prompts: the one reader of prompt sources and the one encoder, shared by bench and train."""

from . import encoding, records
from .encoding import *
from .records import *

__all__ = [*encoding.__all__, *records.__all__]
