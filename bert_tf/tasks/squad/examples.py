"""SQuAD JSON -> `SquadExample`s, as Google's `read_squad_examples`.

Each paragraph's context is split into words at whitespace, keeping for
every character the index of the word it belongs to (whitespace characters
belong to the word before them). Whitespace here is Google's own short list
-- " ", "\\t", "\\r", "\\n" and U+202F (narrow no-break space) -- not
Python's `str.isspace`: a U+00A0 no-break space, for example, stays inside
a word, exactly as in the original, so the same words and the same features
come out.

An answer is located by its `answer_start` character offset: its first and
last characters give the first and last word of the answer. For training,
as in the original, the words so found must contain the answer text
(whitespace-normalized); a question whose answer cannot be found there is
skipped with a warning naming its id (the original skips it silently apart
from a log line). SQuAD 2.0 questions with `is_impossible` get the positions
-1/-1 and the answer "" (their features point at [CLS]).

Unlike the original, the file is checked as it is read: a file that cannot
be read or parsed, or whose structure is not SQuAD's, raises
`SquadFormatError` naming the file and the question id (or the position in
the file when the id itself is missing), instead of a `KeyError` deep inside.
"""

import dataclasses
import re
from typing import List, Optional

from absl import logging

from bert_tf import file_io

# A word between the characters the original splits a context at.
_WORD_RE = re.compile("[^ \t\r\n\u202f]+")


class SquadFormatError(ValueError):
    """A SQuAD file that cannot be read, parsed, or has the wrong structure."""


@dataclasses.dataclass
class SquadExample:
    """One question about one paragraph.

    Attributes:
      qas_id: the question's id (the key of predictions.json).
      question_text: the question, untokenized.
      doc_tokens: the context split into words at whitespace.
      orig_answer_text: the annotated answer (training), "" for impossible
        questions, None when predicting.
      start_position: index in `doc_tokens` of the answer's first word; -1
        for impossible questions, None when predicting.
      end_position: index in `doc_tokens` of the answer's last word.
      is_impossible: SQuAD 2.0: the paragraph does not answer the question.
    """
    qas_id: str
    question_text: str
    doc_tokens: List[str]
    orig_answer_text: Optional[str] = None
    start_position: Optional[int] = None
    end_position: Optional[int] = None
    is_impossible: bool = False


def split_context(paragraph_text):
    """Splits a context into words, as the original does.

    Args:
      paragraph_text: the context string.

    Returns:
      `(doc_tokens, char_to_word_offset)`: the words, and for each character
      of `paragraph_text` the index of its word (a whitespace character
      belongs to the word before it; leading whitespace to word -1).
    """
    doc_tokens = []
    char_to_word_offset = []
    previous_end = 0
    for word_index, match in enumerate(_WORD_RE.finditer(paragraph_text)):
        start = match.start()
        # The whitespace before this word belongs to the word before it
        # (-1 before the first word).
        char_to_word_offset.extend([word_index - 1] * (start - previous_end))
        char_to_word_offset.extend([word_index] * (match.end() - start))
        doc_tokens.append(match.group())
        previous_end = match.end()
    char_to_word_offset.extend(
        [len(doc_tokens) - 1] * (len(paragraph_text) - previous_end))
    return doc_tokens, char_to_word_offset


def load_squad_json(input_file):
    """Reads a SQuAD JSON file and returns its `data` list.

    Args:
      input_file: a local path or anything `tf.io.gfile` opens (gs://...).

    Returns:
      The list of articles (`{"title", "paragraphs": [...]}` dicts).

    Raises:
      FileNotFoundError: the file does not exist (the message names it).
      SquadFormatError: the file is not UTF-8, not JSON, or has no `data`
        list; the message names the file (and the line and column of a
        JSON syntax error).
    """
    input_file = str(input_file)
    data = file_io.read_bytes(input_file, "SQuAD file")
    try:
        text = data.decode("utf-8-sig")  # A byte-order mark is allowed.
    except UnicodeDecodeError as error:
        raise SquadFormatError(
            f"{input_file}: not UTF-8 text ({error.reason} at byte "
            f"{error.start})") from None
    document = file_io.parse_json(text, input_file, SquadFormatError)
    if not isinstance(document, dict) or not isinstance(
            document.get("data"), list):
        raise SquadFormatError(
            f"{input_file}: not a SQuAD file: expected a JSON object with a "
            f"\"data\" list of articles")
    return document["data"]


def iterate_questions(articles, input_file):
    """Yields `(paragraph, qa, where)` for every question, checking structure.

    Args:
      articles: the `data` list of a SQuAD file.
      input_file: the file's name, for messages.

    Yields:
      `(paragraph dict, qa dict, where)`, `where` being a readable location
      ("data[0].paragraphs[3]") used in messages when the id is missing.

    Raises:
      SquadFormatError: an article, paragraph or question is not shaped as
        SQuAD's; the message names the file and the location.
    """
    for article_index, article in enumerate(articles):
        where_article = f"data[{article_index}]"
        if not isinstance(article, dict) or not isinstance(
                article.get("paragraphs"), list):
            raise SquadFormatError(
                f"{input_file}: {where_article} has no \"paragraphs\" list")
        for paragraph_index, paragraph in enumerate(article["paragraphs"]):
            where = f"{where_article}.paragraphs[{paragraph_index}]"
            if not isinstance(paragraph, dict):
                raise SquadFormatError(
                    f"{input_file}: {where} is not a JSON object")
            if not isinstance(paragraph.get("context"), str):
                raise SquadFormatError(
                    f"{input_file}: {where} has no \"context\" string")
            if not isinstance(paragraph.get("qas"), list):
                raise SquadFormatError(
                    f"{input_file}: {where} has no \"qas\" list")
            for qa_index, qa in enumerate(paragraph["qas"]):
                where_qa = f"{where}.qas[{qa_index}]"
                if not isinstance(qa, dict) or "id" not in qa:
                    raise SquadFormatError(
                        f"{input_file}: {where_qa} has no question \"id\"")
                if not isinstance(qa.get("question"), str):
                    raise SquadFormatError(
                        f"{input_file}: question {qa['id']} ({where_qa}) has "
                        f"no \"question\" string")
                yield paragraph, qa, where_qa


def _locate_answer(qa, paragraph_text, doc_tokens, char_to_word_offset,
                   input_file):
    """The word span of a training question's only answer, as the original.

    Returns:
      `(answer_text, start_word, end_word)`, or None (after a warning naming
      the question) when the answer cannot be found in the context.

    Raises:
      SquadFormatError: the answer itself is malformed (no text or no
        integer `answer_start`).
    """
    qas_id = qa["id"]
    answer = qa["answers"][0]
    if (not isinstance(answer, dict) or not isinstance(answer.get("text"), str)
            or isinstance(answer.get("answer_start"), bool)
            or not isinstance(answer.get("answer_start"), int)):
        raise SquadFormatError(
            f"{input_file}: question {qas_id}: an answer must be an object "
            f"with a \"text\" string and an integer \"answer_start\", got "
            f"{answer!r}")
    answer_text = answer["text"]
    answer_start = answer["answer_start"]
    answer_end = answer_start + len(answer_text) - 1
    # The original indexes `char_to_word_offset` unchecked (an IndexError,
    # or a negative index counting from the end); here such an answer is
    # one that cannot be found.
    if not answer_text:
        logging.warning("%s: skipping question %s: its answer text is empty",
                        input_file, qas_id)
        return None
    if answer_start < 0 or answer_end >= len(paragraph_text):
        logging.warning(
            "%s: skipping question %s: answer_start %d (answer of %d "
            "characters) is outside its context of %d characters",
            input_file, qas_id, answer_start, len(answer_text),
            len(paragraph_text))
        return None
    start_word = char_to_word_offset[answer_start]
    end_word = char_to_word_offset[answer_end]
    if start_word < 0:
        # Whitespace before the first word: the original would slice the
        # words from the end; no answer starts there.
        logging.warning(
            "%s: skipping question %s: answer_start %d is in the whitespace "
            "before the context's first word", input_file, qas_id,
            answer_start)
        return None
    # Only answers whose text is (whitespace aside) inside the words found
    # are kept, as in the original: this throws out annotations whose
    # answer_start does not match their text.
    actual_text = " ".join(doc_tokens[start_word:end_word + 1])
    cleaned_answer_text = " ".join(answer_text.split())
    if actual_text.find(cleaned_answer_text) == -1:
        logging.warning(
            "%s: skipping question %s: answer %r not found at answer_start "
            "%d (the words there are %r)", input_file, qas_id,
            cleaned_answer_text, answer_start, actual_text)
        return None
    return answer_text, start_word, end_word


def read_squad_examples(input_file, is_training,
                        version_2_with_negative=False):
    """Reads a SQuAD 1.1 or 2.0 file into `SquadExample`s, as the original.

    Args:
      input_file: path of the JSON file.
      is_training: locate each question's answer (exactly one is required,
        unless impossible); questions whose answer cannot be found in their
        context are skipped with a warning. When False, answers are ignored.
      version_2_with_negative: read SQuAD 2.0's `is_impossible` (training).

    Returns:
      A list of `SquadExample`s in file order.

    Raises:
      FileNotFoundError, SquadFormatError: see `load_squad_json`; also a
        training question without exactly one answer, or without
        `is_impossible` in a SQuAD 2.0 file (naming file and question id).
    """
    input_file = str(input_file)
    return examples_of_articles(load_squad_json(input_file), input_file,
                                is_training, version_2_with_negative)


def examples_of_articles(articles, input_file, is_training,
                         version_2_with_negative=False):
    """`read_squad_examples` of a SQuAD JSON's `data` list, already read
    (`input_file` names it in messages)."""
    examples = []
    num_questions = 0
    skipped = []
    seen_ids = set()
    split_cache = (None, None)  # (paragraph dict, its split context)
    for paragraph, qa, _ in iterate_questions(articles, input_file):
        num_questions += 1
        qas_id = qa["id"]
        if qas_id in seen_ids:
            logging.warning(
                "%s: question id %s appears more than once; predictions.json "
                "keeps only one answer per id", input_file, qas_id)
        seen_ids.add(qas_id)
        if split_cache[0] is not paragraph:
            paragraph_text = paragraph["context"]
            split_cache = (paragraph, split_context(paragraph_text))
            if not split_cache[1][0]:
                ids = [str(q.get("id")) for q in paragraph["qas"]
                       if isinstance(q, dict)]
                logging.warning(
                    "%s: empty context for question%s %s: %s",
                    input_file, "s" if len(ids) > 1 else "", ", ".join(ids),
                    "they are skipped" if is_training else
                    "they get no answer")
        paragraph_text = paragraph["context"]
        doc_tokens, char_to_word_offset = split_cache[1]

        orig_answer_text = None
        start_position = end_position = None
        is_impossible = False
        if is_training:
            if version_2_with_negative:
                if not isinstance(qa.get("is_impossible"), bool):
                    raise SquadFormatError(
                        f"{input_file}: question {qas_id} has no boolean "
                        "\"is_impossible\", which --version_2_with_negative "
                        "training needs (is this a SQuAD 1.1 file?)")
                is_impossible = qa["is_impossible"]
            answers = qa.get("answers")
            if not isinstance(answers, list):
                raise SquadFormatError(
                    f"{input_file}: question {qas_id} has no \"answers\" "
                    "list, which training needs")
            if not is_impossible and len(answers) != 1:
                raise SquadFormatError(
                    f"{input_file}: question {qas_id} has {len(answers)} "
                    "answers; for training, each question should have "
                    "exactly 1 answer")
            if is_impossible:
                orig_answer_text = ""
                start_position = end_position = -1
            elif not doc_tokens:
                skipped.append(qas_id)
                continue
            else:
                located = _locate_answer(qa, paragraph_text, doc_tokens,
                                         char_to_word_offset, input_file)
                if located is None:
                    skipped.append(qas_id)
                    continue
                orig_answer_text, start_position, end_position = located

        examples.append(SquadExample(
            qas_id=qas_id,
            question_text=qa["question"],
            doc_tokens=doc_tokens,
            orig_answer_text=orig_answer_text,
            start_position=start_position,
            end_position=end_position,
            is_impossible=is_impossible))
    if skipped:
        logging.warning(
            "%s: skipped %d of %d training questions whose answer could not "
            "be found in the context (first: %s)", input_file, len(skipped),
            num_questions, ", ".join(map(str, skipped[:5])))
    if not examples:
        raise SquadFormatError(f"{input_file}: no usable questions")
    return examples


def has_gold_answers(input_file, version_2_with_negative=False):
    """Whether a SQuAD file can be scored: its questions carry answers.

    The SQuAD test sets come without answers; dev sets have them. For 2.0 a
    question marked `is_impossible` (answer "") counts as answered.

    Raises:
      FileNotFoundError, SquadFormatError: as `load_squad_json`.
    """
    return articles_have_answers(load_squad_json(input_file), str(input_file),
                                 version_2_with_negative)


def articles_have_answers(articles, input_file,
                          version_2_with_negative=False):
    """`has_gold_answers` of a SQuAD JSON's `data` list, already read."""
    for _, qa, _ in iterate_questions(articles, input_file):
        if qa.get("answers"):
            return True
        if version_2_with_negative and qa.get("is_impossible") is True:
            return True
    return False

