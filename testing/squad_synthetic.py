"""Generated SQuAD files: realistic hazards, exact answers, any size.

For the SQuAD tests and benchmarks/squad.py. Contexts are drawn from a word
list (the tests use Google's golden corpus, Hamlet verse lines) with
deliberate hazards mixed in: accented words, punctuation glued to words,
runs of spaces, tabs, newlines, U+202F (a separator for the original) and
U+00A0 (not one). Answers are whole or partial word spans whose
`answer_start` is exact, so every reader must keep them; a few SQuAD 2.0
questions are impossible.

Nothing here uses the rest of bert_tf: the data is an input, to be read by
bert_tf and by a reference (Model Garden's `squad_lib`) alike.
"""

import json
import pathlib

# Glued between words: each exercises a different path of the splitter or
# of the tokenizer.
_SEPARATORS = [" "] * 20 + ["  ", "\t", "\n", " \u202f", "\u202f", " \r\n "]
_DECORATIONS = [
    lambda w: w,
    lambda w: w,
    lambda w: w,
    lambda w: f"({w})",
    lambda w: f"{w},",
    lambda w: f"\u201c{w}\u201d",
    lambda w: w.capitalize(),
    lambda w: w.upper(),
    lambda w: f"{w}'s",
]
# A no-break space stays inside a word for the original, but Python's
# `split` (used on answers) splits at it: such answers are skipped in
# training, so this hazard is kept rare.
_NO_BREAK_SPACE_PROBABILITY = 0.01
_ACCENTED = ["Ophélie", "naïve", "café", "Æneas", "Straße", "Zoë",
             "déjà", "Ḱnig", "São", "1895-1943"]


def read_words(path):
    """The whitespace-separated words of a text file, in order."""
    text = pathlib.Path(path).read_text(encoding="utf-8")
    return text.split()


def make_context(rng, words, num_words):
    """A context of `num_words` decorated words and odd separators.

    Returns:
      `(context, word_starts)`: the string and each word's character span
      `(start, end)` (end exclusive).
    """
    pieces = []
    spans = []
    position = 0
    for index in range(num_words):
        if rng.random() < 0.08:
            word = rng.choice(_ACCENTED)
        else:
            word = rng.choice(words)
        word = rng.choice(_DECORATIONS)(word)
        if rng.random() < _NO_BREAK_SPACE_PROBABILITY:
            word = f"{word}\u00a0{word}"
        if index:
            separator = rng.choice(_SEPARATORS)
            pieces.append(separator)
            position += len(separator)
        pieces.append(word)
        spans.append((position, position + len(word)))
        position += len(word)
    return "".join(pieces), spans


def make_squad(rng, words, num_paragraphs, questions_per_paragraph=3,
               min_words=20, max_words=250, version_2=False,
               title_prefix="generated"):
    """A SQuAD-format dict of generated paragraphs and questions.

    Answers are spans of 1-4 words (sometimes starting or ending inside a
    word, as real annotations do); `answer_start` is always exact. With
    `version_2`, about one question in five is impossible.

    Args:
      rng: a `random.Random`; the same seed gives the same document.
      words: the words contexts and questions are drawn from.
      num_paragraphs: paragraphs (one article each).
      questions_per_paragraph: questions on each paragraph.
      min_words, max_words: the range of a context's length in words.
      version_2: SQuAD 2.0 layout, with impossible questions.
      title_prefix: start of every title and question id.

    Returns:
      The document as a dict (`{"version": ..., "data": [...]}`).
    """
    articles = []
    for paragraph_index in range(num_paragraphs):
        context, spans = make_context(
            rng, words, rng.randint(min_words, max_words))
        qas = []
        for question_index in range(questions_per_paragraph):
            qas_id = f"{title_prefix}-{paragraph_index}-{question_index}"
            question = " ".join(rng.choice(words)
                                for _ in range(rng.randint(3, 40)))
            qa = {"id": qas_id, "question": question + "?"}
            if version_2 and rng.random() < 0.2:
                qa["is_impossible"] = True
                qa["answers"] = []
                qa["plausible_answers"] = []
            else:
                first = rng.randrange(len(spans))
                last = min(len(spans) - 1, first + rng.randint(0, 3))
                start, end = spans[first][0], spans[last][1]
                if rng.random() < 0.15 and end - start > 2:
                    # A partial word, like "Japan" inside "Japanese".
                    end -= 1
                answer = {"text": context[start:end], "answer_start": start}
                qa["answers"] = [answer]
                if version_2:
                    qa["is_impossible"] = False
            qas.append(qa)
        articles.append({"title": f"{title_prefix}-{paragraph_index}",
                         "paragraphs": [{"context": context, "qas": qas}]})
    return {"version": "v2.0" if version_2 else "1.1", "data": articles}


def write_json(path, document):
    """Writes a SQuAD dict as UTF-8 JSON; returns the path as a string."""
    pathlib.Path(path).write_text(json.dumps(document, ensure_ascii=False),
                                  encoding="utf-8")
    return str(path)
