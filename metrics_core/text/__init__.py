"""Bias in generated text: HONEST, demographic representation, stereotypical association, WEAT.

Each row of a window is one generated completion (data key ``"text"``); the attribute of
a row is the demographic group its *prompt* was about (``prompt_group = female``).

- HONEST (Nozza et al., 2021) is a rate: the share of completions that contain a word of
  a hurtful-word lexicon. Per prompt group it is compared with the reference group's
  share (difference with Newcombe's interval, ratio with Katz's), and reported for the
  whole window.
- Demographic representation and stereotypical association (HELM, Liang et al., 2022)
  are model-level: how far the mentions of each demographic group's words (overall, or
  next to each target word such as a profession) are from equal representation, as a
  total-variation distance from the uniform distribution.
- WEAT (Caliskan et al., 2017) compares two target word sets X, Y with two attribute sets
  A, B in an embedding space; it does not depend on the logged rows.

Word lists, targets, the lexicon, the WEAT sets and the embeddings are arguments: the
service reads the user's files. :func:`default_word_lists`, :func:`default_targets` and
:func:`default_lexicon` read the small lists shipped with the package (the lexicon is a
*test* lexicon, not HurtLex). Words are matched on tokens (:func:`tokenize`), not on a
whitespace split. LPBS, CBS, CPS and AUL need a live masked language model and are out of
scope for a log monitor (``docs/families/text.md``).
"""

from metrics_core.text.evaluate import INPUTS, evaluate
from metrics_core.text.metrics import (
    demographic_representation,
    honest_difference,
    honest_ratio,
    honest_score,
    lexicon_hits,
    stereotypical_association,
)
from metrics_core.text.specs import SPECS
from metrics_core.text.tokenize import (
    default_lexicon,
    default_targets,
    default_word_lists,
    parse_embeddings,
    parse_word_list,
    tokenize,
)
from metrics_core.text.weat import WeatResult, weat, weat_effect_size, weat_p_value

__all__ = [
    "INPUTS",
    "SPECS",
    "WeatResult",
    "default_lexicon",
    "default_targets",
    "default_word_lists",
    "demographic_representation",
    "evaluate",
    "honest_difference",
    "honest_ratio",
    "honest_score",
    "lexicon_hits",
    "parse_embeddings",
    "parse_word_list",
    "stereotypical_association",
    "tokenize",
    "weat",
    "weat_effect_size",
    "weat_p_value",
]
