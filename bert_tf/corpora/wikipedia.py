"""A pretraining corpus from a Wikipedia XML dump, in Google's text format.

Google's `create_pretraining_data.py` reads plain text with one sentence per
line and an empty line between documents. This module turns a MediaWiki
`pages-articles` XML dump into that format, one document per article:

1. **Reading** (`iter_articles`): the dump (bz2-compressed or plain XML) is
   parsed as a stream with `xml.etree.ElementTree.iterparse`; each `<page>`
   is handled and then dropped, so memory holds one article at a time.
   Redirects and pages outside the article namespace (talk pages,
   `Wikipedia:`, `Template:`, ...) are skipped.
2. **Cleaning** (`clean_wikitext`): wiki markup is removed by regular
   expressions and small bracket-matching scanners (templates, tables
   and links nest, which regular expressions cannot follow). What is kept is
   the running prose: link labels, the text of bold/italic spans, list
   items; headings, templates, tables, references, files, categories and
   the trailing "References"/"External links"/... sections are dropped.
3. **Sentence splitting** (`split_sentences`): a rule-based splitter. A
   sentence ends at ".", "!" or "?" (and any closing quotes or brackets)
   followed by whitespace and a capital letter (possibly after an opening
   quote or bracket) -- except after common abbreviations ("Mr.", "Dr.",
   "e.g.", "St.", ...), dotted acronyms ("U.S.") and single capital
   initials ("J. R. R. Tolkien"). Decimal numbers ("3.5") never split,
   because no whitespace follows their point.
4. **Writing** (`write_corpus`): sentences with fewer than
   `min_sentence_words` words (headings that slipped through, captions,
   fragments) are dropped, then articles with fewer than
   `min_document_sentences` sentences. The output is written to a
   temporary file next to `output_file` and renamed at the end, so an
   interrupted run never leaves a half-written corpus behind.

Everything is deterministic: the same dump gives the same bytes.

The default dump is the one the `gensim` package ships for its tests (real
English Wikipedia pages, 1.7 MB compressed). Only the file is read; gensim is
located with `importlib.util.find_spec` and never imported, so
`pip install --no-deps gensim==4.4.0` is enough.
"""

import bz2
import collections
import html
import os
import re
import xml.etree.ElementTree as ElementTree

from bert_tf import file_io
from bert_tf.corpora import package_files

GENSIM_PACKAGE = "gensim"
GENSIM_REQUIREMENT = "gensim==4.4.0"
GENSIM_WIKI_DUMP = os.path.join(
    "test", "test_data",
    "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2")

DEFAULT_MIN_SENTENCE_WORDS = 4
DEFAULT_MIN_DOCUMENT_SENTENCES = 2

# The article namespace; every other one (talk, user, project pages, ...)
# holds no encyclopedic prose.
_ARTICLE_NAMESPACE = 0

# Section titles (compared lower-cased) after which an article holds
# citations and link lists rather than prose; such a section is skipped up
# to the next heading of the same or a higher level.
_SKIPPED_SECTIONS = frozenset((
    "references", "external links", "see also", "further reading", "notes",
    "bibliography", "sources", "footnotes", "citations",
    "notes and references",
    "references and notes", "works cited", "general references",
    "external sources", "publications", "selected works", "works",
    "discography", "filmography", "gallery"))

# Link namespaces whose links render as media or metadata, not as text.
_DROPPED_LINK_NAMESPACES = frozenset((
    "file", "image", "media", "category"))

# Elements dropped together with their content: citations, formulas and
# media have no prose. Other tags (<sub>, <span>, <blockquote>, ...) are
# dropped but their content is kept.
_DROPPED_ELEMENTS = (
    "ref", "math", "gallery", "timeline", "syntaxhighlight", "source",
    "score", "chem", "ce", "imagemap", "hiero", "graph", "mapframe",
    "templatedata", "references", "table", "code", "pre")

_COMMENT_RE = re.compile(r"<!--.*?(?:-->|\Z)", re.S)
_SELF_CLOSING_TAG_RE = re.compile(r"<[A-Za-z][A-Za-z0-9]*\b[^<>]*/\s*>")
_DROPPED_ELEMENT_RE = re.compile(
    r"<(%s)\b[^<>]*>.*?</\1\s*>" % "|".join(_DROPPED_ELEMENTS), re.S | re.I)
_TEMPLATE_DELIMITER_RE = re.compile(r"\{\{|\}\}")
_TABLE_DELIMITER_RE = re.compile(r"\{\||\|\}")
_LINK_DELIMITER_RE = re.compile(r"\[\[|\]\]")
# An interlanguage link without label, "[[de:Anarchismus]]".
_INTERLANGUAGE_LINK_RE = re.compile(r"[a-z]{2,3}(?:-[a-z]+)*:")
_EXTERNAL_LINK_RE = re.compile(
    r"\[(?:https?:|ftp:)?//[^\s\]]*(?:\s+([^\]]*))?\]", re.I)
_BARE_URL_RE = re.compile(r"\b(?:https?|ftp)://[^\s<>\]]+", re.I)
_BOLD_ITALIC_RE = re.compile(r"'{2,}")
_HTML_TAG_RE = re.compile(r"</?[A-Za-z][A-Za-z0-9]*\b[^<>]*>")
_MAGIC_WORD_RE = re.compile(r"__[A-Z]+__")
_HEADING_RE = re.compile(r"\s*(=+)\s*(.*?)\s*\1\s*")
_LIST_MARKER_RE = re.compile(r"[*#:;]+\s*")
_SPACES_RE = re.compile(r"\s+")
# What removed markup leaves behind: "( ; from Greek", "word ,", "()".
_EMPTY_PARENTHESES_RE = re.compile(r"\(\s*[,;:]*\s*\)")
_OPENING_PARENTHESIS_PUNCTUATION_RE = re.compile(r"\(\s*[,;:]+\s*")
_SPACE_BEFORE_PUNCTUATION_RE = re.compile(r" +([,.;:!?)\]])")

# Ends a sentence candidate: terminal punctuation, closing quotes or
# brackets, then whitespace (what follows is checked in code).
_SENTENCE_END_RE = re.compile(r"[.!?]+['\"\u201d\u2019)\]]*\s+")
_OPENERS = "'\"\u201c\u2018(["
# Dotted acronyms and abbreviations: "U.S", "e.g", "i.e", "a.m".
_DOTTED_ACRONYM_RE = re.compile(r"(?:[A-Za-z]\.)+[A-Za-z]")
# Words that end in "." without ending a sentence (compared lower-cased,
# without the period). "etc." is left out on purpose: it ends sentences as
# often as not.
_ABBREVIATIONS = frozenset((
    "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "mt", "ft", "ste",
    "gen", "col", "lt", "maj", "capt", "cpt", "sgt", "cmdr", "adm", "gov",
    "rev", "hon", "pres", "sen", "rep", "fr", "messrs", "mme", "mlle",
    "vs", "cf", "al", "approx", "ca", "c", "esp", "incl", "viz", "resp",
    "no", "nos", "vol", "vols", "p", "pp", "ed", "eds", "fig", "figs",
    "ch", "chap", "sec", "art", "op", "inc", "ltd", "co", "corp", "bros",
    "dept", "univ", "assn", "est", "jan", "feb", "mar", "apr", "jun", "jul",
    "aug", "sep", "sept", "oct", "nov", "dec", "ph.d", "b.a", "m.a",
    "b.sc", "m.sc", "u.s.a"))


CorpusStats = collections.namedtuple(
    "CorpusStats", ["articles_read", "documents", "sentences", "bytes"])
CorpusStats.__doc__ = """What `write_corpus` wrote.

Fields:
  articles_read: articles (non-redirect pages of the article namespace)
    read from the dump.
  documents: documents written (articles with enough sentences).
  sentences: sentence lines written.
  bytes: size of the output file.
"""


def find_gensim_wiki_dump():
    """Path of the English Wikipedia dump inside the installed gensim.

    Returns:
      The path of `enwiki-latest-pages-articles1.xml-...-shortened.bz2`.

    Raises:
      FileNotFoundError: gensim is not installed, or lacks the file.
    """
    return package_files.package_file(GENSIM_PACKAGE, GENSIM_WIKI_DUMP,
                                      GENSIM_REQUIREMENT,
                                      "the default Wikipedia dump")


# -- reading the dump ------------------------------------------------------

def _local_name(tag):
    """"{http://www.mediawiki.org/xml/export-0.10/}page" -> "page"."""
    return tag.rpartition("}")[2]


def _open_dump(dump_file):
    """Opens a dump for binary reading, decompressing bz2 if it is bz2.

    The format is recognised by its first bytes ("BZh"), not by the name.

    Raises:
      FileNotFoundError: the file does not exist (the message names it).
    """
    try:
        with open(dump_file, "rb") as probe:
            magic = probe.read(3)
    except FileNotFoundError:
        raise FileNotFoundError(
            f"Wikipedia dump {dump_file} does not exist") from None
    except IsADirectoryError:
        raise IsADirectoryError(
            f"Wikipedia dump {dump_file} is a directory, not a file") from None
    if magic == b"BZh":
        return bz2.open(dump_file, "rb")
    return open(dump_file, "rb")


def _page_fields(page, namespace_names, dump_file):
    """(title, namespace, is_redirect, text) of one `<page>` element.

    Raises:
      ValueError: the page's `<ns>` is not an integer.
    """
    title = ""
    namespace = None
    is_redirect = False
    text = None
    for child in page:
        name = _local_name(child.tag)
        if name == "title":
            title = child.text or ""
        elif name == "ns":
            try:
                namespace = int((child.text or "0").strip())
            except ValueError:
                raise ValueError(
                    f"{dump_file}, page {title!r}: <ns> is not an integer "
                    f"({child.text!r})") from None
        elif name == "redirect":
            is_redirect = True
        elif name == "revision":
            # History dumps hold several revisions: the last is current.
            for field in child:
                if _local_name(field.tag) == "text":
                    text = field.text or ""
    if namespace is None:
        # Old dumps have no <ns>: a title prefix names the namespace.
        prefix, colon, _ = title.partition(":")
        is_prefixed = colon and prefix in namespace_names
        namespace = 1 if is_prefixed else _ARTICLE_NAMESPACE
    if text is not None and text.lstrip()[:9].upper() == "#REDIRECT":
        is_redirect = True
    return title, namespace, is_redirect, text


def iter_articles(dump_file):
    """Yields the articles of a MediaWiki XML dump, streaming.

    Args:
      dump_file: a `pages-articles` dump, bz2-compressed or plain XML.

    Yields:
      (title, wikitext) for each page of the article namespace that is not
      a redirect, in file order.

    Raises:
      FileNotFoundError: the file does not exist.
      ValueError: the file is not a valid bz2 stream, not well-formed XML
        (invalid UTF-8 included), or not a MediaWiki dump; the message names
        the file and, for XML errors, the line.
    """
    namespace_names = set()
    try:
        with _open_dump(dump_file) as stream:
            events = ElementTree.iterparse(stream, events=("start", "end"))
            root = None
            for event, element in events:
                if root is None:
                    root = element
                    if _local_name(root.tag) != "mediawiki":
                        raise ValueError(
                            f"{dump_file} is not a MediaWiki XML dump: its "
                            f"root element is <{_local_name(root.tag)}>, "
                            f"not <mediawiki>")
                    continue
                if event != "end":
                    continue
                name = _local_name(element.tag)
                if name == "namespace" and element.text:
                    namespace_names.add(element.text)
                elif name == "page":
                    title, namespace, is_redirect, text = _page_fields(
                        element, namespace_names, dump_file)
                    # Drop the finished page (and anything before it) so
                    # memory holds one page at a time.
                    root.clear()
                    if (namespace == _ARTICLE_NAMESPACE and not is_redirect
                            and text):
                        yield title, text
    except ElementTree.ParseError as error:
        line, column = error.position
        reason = str(error).split(":")[0]
        raise ValueError(
            f"{dump_file}, line {line}, column {column + 1}: not a valid "
            f"MediaWiki XML dump ({reason})") from None
    except (OSError, EOFError) as error:
        if isinstance(error, FileNotFoundError):
            raise
        raise ValueError(
            f"{dump_file}: cannot read the bz2-compressed dump ({error})"
        ) from None


# -- cleaning wiki markup --------------------------------------------------

def _remove_balanced(text, delimiter_re, opener):
    """Removes nested spans delimited by `delimiter_re`'s two tokens.

    A depth counter follows the openers and closers, so nested templates
    ("{{a|{{b}}}}") go as one span. An opener that is never closed drops the
    rest of its line only (dropping to the end of the article would lose
    it whole for one typo); a stray closer is dropped alone.

    Args:
      text: wikitext.
      delimiter_re: matches the opening and the closing token.
      opener: the opening token ("{{" or "{|").

    Returns:
      `text` without the spans.
    """
    pieces = []
    kept_from = 0   # Start of the text not yet copied to `pieces`.
    depth = 0
    span_start = 0  # Where the outermost open span began.
    for match in delimiter_re.finditer(text):
        if match.group() == opener:
            if depth == 0:
                span_start = match.start()
            depth += 1
        elif depth > 0:
            depth -= 1
            if depth == 0:
                pieces.append(text[kept_from:span_start])
                kept_from = match.end()
        else:
            pieces.append(text[kept_from:match.start()])
            kept_from = match.end()
    if depth > 0:
        pieces.append(text[kept_from:span_start])
        line_end = text.find("\n", span_start)
        kept_from = len(text) if line_end < 0 else line_end
    pieces.append(text[kept_from:])
    return "".join(pieces)


def _link_label(link):
    """What an internal link shows as text, given its inside "target|label"."""
    target, pipe, label = link.partition("|")
    target = target.strip()
    if target.startswith(":"):
        # "[[:Category:X]]" is a visible link to the category page.
        target = target[1:]
    else:
        namespace, colon, _ = target.partition(":")
        if colon and namespace.strip().lower() in _DROPPED_LINK_NAMESPACES:
            return ""
        if not pipe and _INTERLANGUAGE_LINK_RE.match(target):
            return ""
    if pipe:
        label = label.strip()
        # "[[Paris, Texas|]]" (the pipe trick) shows its target.
        return label if label else target
    return target


def _resolve_links(text):
    """Replaces internal links `[[target|label]]` by the text they show.

    Links nest (a File: caption holds links), and labels may hold single
    brackets ("Bicyclo[1.1.0]butane"), so "[[" and "]]" are matched with a
    stack rather than a regular expression: each link's inside is resolved
    before the link itself. Unclosed "[[" keep their text; stray "]]" go.
    """
    buffers = [[]]  # buffers[0]: the output; each further one: an open link.
    position = 0
    for match in _LINK_DELIMITER_RE.finditer(text):
        buffers[-1].append(text[position:match.start()])
        position = match.end()
        if match.group() == "[[":
            buffers.append([])
        elif len(buffers) > 1:
            link = "".join(buffers.pop())
            buffers[-1].append(_link_label(link))
    buffers[-1].append(text[position:])
    while len(buffers) > 1:
        unclosed = "".join(buffers.pop())
        buffers[-1].append(unclosed)
    return "".join(buffers[0])


def _strip_inline_markup(text):
    """Removes markup within a paragraph; returns plain text."""
    text = _EXTERNAL_LINK_RE.sub(lambda m: m.group(1) or "", text)
    text = _BARE_URL_RE.sub("", text)
    text = _BOLD_ITALIC_RE.sub("", text)
    text = _HTML_TAG_RE.sub("", text)
    text = _MAGIC_WORD_RE.sub("", text)
    # Entities last: "&lt;ref&gt;" written as text must not become a tag.
    text = html.unescape(text)
    text = _SPACES_RE.sub(" ", text).strip()
    text = _EMPTY_PARENTHESES_RE.sub("", text)
    text = _OPENING_PARENTHESIS_PUNCTUATION_RE.sub("(", text)
    text = _SPACE_BEFORE_PUNCTUATION_RE.sub(r"\1", text)
    return _SPACES_RE.sub(" ", text).strip()


def clean_wikitext(wikitext):
    """Plain-text paragraphs of an article's wikitext.

    Args:
      wikitext: the article's source, as in the dump's `<text>` element.

    Returns:
      A list of non-empty paragraphs (str), in article order. Consecutive
      text lines form one paragraph (as MediaWiki renders them); blank
      lines, headings and list items separate paragraphs, and each list item
      is a paragraph of its own.
    """
    text = _COMMENT_RE.sub("", wikitext)
    text = _SELF_CLOSING_TAG_RE.sub(" ", text)
    text = _DROPPED_ELEMENT_RE.sub(" ", text)
    text = _remove_balanced(text, _TEMPLATE_DELIMITER_RE, "{{")
    text = _remove_balanced(text, _TABLE_DELIMITER_RE, "{|")
    text = _resolve_links(text)

    paragraphs = []
    current = []
    skipped_level = 0  # Level of the heading of a skipped section, or 0.

    def end_paragraph():
        if current:
            paragraph = _strip_inline_markup(" ".join(current))
            if paragraph:
                paragraphs.append(paragraph)
            current.clear()

    for line in text.split("\n"):
        heading = _HEADING_RE.fullmatch(line)
        if heading:
            end_paragraph()
            level = len(heading.group(1))
            title = _strip_inline_markup(heading.group(2)).lower()
            if skipped_level and level > skipped_level:
                continue  # A subsection of a skipped section.
            skipped_level = level if title in _SKIPPED_SECTIONS else 0
            continue
        if skipped_level:
            continue
        stripped = line.strip()
        if not stripped:
            end_paragraph()
        elif stripped[0] in "|!{}":
            # What is left of a broken table or template: no prose.
            end_paragraph()
        elif stripped[0] in "*#:;":
            end_paragraph()
            current.append(_LIST_MARKER_RE.sub("", stripped, count=1))
            end_paragraph()
        else:
            current.append(stripped)
    end_paragraph()
    return paragraphs


# -- sentence splitting ----------------------------------------------------

def _ends_with_abbreviation(text, period_index):
    """Whether the "." at `period_index` closes an abbreviation or initial."""
    word_start = text.rfind(" ", 0, period_index) + 1
    word = text[word_start:period_index].lstrip(_OPENERS)
    if not word:
        return False
    if len(word) == 1:
        return word.isupper()  # An initial: "J. R. R. Tolkien".
    if word.lower() in _ABBREVIATIONS:
        return True
    return _DOTTED_ACRONYM_RE.fullmatch(word) is not None  # "U.S.", "e.g."


def _starts_sentence(text, index):
    """Whether a sentence can start at `text[index]`: a capital letter,
    possibly after opening quotes or brackets."""
    length = len(text)
    while index < length and text[index] in _OPENERS:
        index += 1
    return index < length and text[index].isupper()


def split_sentences(paragraph):
    """Splits a paragraph of plain text into sentences.

    Args:
      paragraph: text on one line (whitespace is kept as it is).

    Returns:
      The sentences, stripped, in order; their concatenation (with single
      spaces) is the paragraph up to whitespace.
    """
    sentences = []
    start = 0
    for match in _SENTENCE_END_RE.finditer(paragraph):
        end = match.end()
        if not _starts_sentence(paragraph, end):
            continue
        terminator = match.group().rstrip()
        if terminator.rstrip("'\"\u201d\u2019)]") == "." and (
                _ends_with_abbreviation(paragraph, match.start())):
            continue
        sentence = paragraph[start:end].strip()
        if sentence:
            sentences.append(sentence)
        start = end
    rest = paragraph[start:].strip()
    if rest:
        sentences.append(rest)
    return sentences


def article_sentences(wikitext,
                      min_sentence_words=DEFAULT_MIN_SENTENCE_WORDS):
    """The sentences of an article that are kept for the corpus.

    Args:
      wikitext: the article's source.
      min_sentence_words: sentences with fewer whitespace-separated words
        are dropped (fragments, captions, leftovers of markup).

    Returns:
      A list of sentences (str, no newlines), in article order.
    """
    kept = []
    for paragraph in clean_wikitext(wikitext):
        for sentence in split_sentences(paragraph):
            if len(sentence.split()) >= min_sentence_words:
                kept.append(sentence)
    return kept


# -- writing the corpus ----------------------------------------------------

def write_corpus(dump_file, output_file, max_documents=None,
                 min_sentence_words=DEFAULT_MIN_SENTENCE_WORDS,
                 min_document_sentences=DEFAULT_MIN_DOCUMENT_SENTENCES):
    """Writes a dump's articles in Google's pretraining text format.

    One sentence per line, an empty line between documents (articles), UTF-8.
    The file is written under a temporary name in the same directory and
    renamed when complete.

    Args:
      dump_file: a MediaWiki `pages-articles` XML dump (bz2 or plain).
      output_file: the text file to write; its directory must exist.
      max_documents: stop after this many documents (None: all).
      min_sentence_words: see `article_sentences`.
      min_document_sentences: articles with fewer kept sentences are
        dropped (a document needs two sentences for next-sentence
        prediction).

    Returns:
      A `CorpusStats`.

    Raises:
      FileNotFoundError, ValueError: see `iter_articles`.
      ValueError: no article yields a document (the message names the dump),
        or an argument is out of range.
    """
    if max_documents is not None and max_documents < 1:
        raise ValueError(f"max_documents must be at least 1, got "
                         f"{max_documents}")
    if min_document_sentences < 1:
        raise ValueError(f"min_document_sentences must be at least 1, got "
                         f"{min_document_sentences}")
    articles_read = documents = sentences = 0
    with file_io.atomic_write(output_file, newline="\n") as writer:
        for _, wikitext in iter_articles(dump_file):
            articles_read += 1
            kept = article_sentences(wikitext, min_sentence_words)
            if len(kept) < min_document_sentences:
                continue
            if documents:
                writer.write("\n")  # The empty line between documents.
            writer.write("\n".join(kept))
            writer.write("\n")
            documents += 1
            sentences += len(kept)
            if max_documents is not None and documents >= max_documents:
                break
        if not documents:
            raise ValueError(
                f"no document in {dump_file}: {articles_read} articles read, "
                f"none with {min_document_sentences} or more sentences of "
                f"{min_sentence_words} or more words")
    return CorpusStats(articles_read, documents, sentences,
                       os.path.getsize(output_file))
