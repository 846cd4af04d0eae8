"""`gt.optim`: SGD, Adam, AdamW and RMSprop with torch's arguments, formulas and state_dict
format, and `gt.optim.lr_scheduler`. On cuda each parameter's step is one generated kernel."""

from . import lr_scheduler
from .adam import Adam, AdamW
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "lr_scheduler"]
