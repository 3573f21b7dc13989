"""Prompts: the one reader of prompt sources and the one encoder, shared by bench and train."""

from .encoding import *
from .records import *
from . import encoding, records

__all__ = [*encoding.__all__, *records.__all__]
