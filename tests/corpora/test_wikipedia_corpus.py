"""Tests of the Wikipedia dump -> Google-format corpus pipeline."""

import bz2
import importlib.util
import os
from xml.sax.saxutils import escape

import pytest

from bert_tf import prepare_corpus
from bert_tf.corpora import wikipedia as wc


def _dump_xml(pages, with_namespaces=True):
    """A small MediaWiki export. `pages`: (title, ns or None, text,
    is_redirect) tuples."""
    parts = ['<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/" '
             'version="0.10" xml:lang="en">', "<siteinfo>"]
    if with_namespaces:
        parts.append('<namespaces><namespace key="0" case="first-letter" />'
                     '<namespace key="1" case="first-letter">Talk</namespace>'
                     '<namespace key="4" case="first-letter">Wikipedia'
                     '</namespace></namespaces>')
    parts.append("</siteinfo>")
    for title, namespace, text, is_redirect in pages:
        parts.append(f"<page><title>{escape(title)}</title>")
        if namespace is not None:
            parts.append(f"<ns>{namespace}</ns>")
        if is_redirect:
            parts.append('<redirect title="Elsewhere" />')
        parts.append(f'<revision><id>1</id><text xml:space="preserve">'
                     f"{escape(text)}</text></revision></page>")
    parts.append("</mediawiki>")
    return "\n".join(parts).encode("utf-8")


_ARTICLE_ONE = """{{Infobox person|name=Ada|birth={{birth date|1815|12|10}}}}
'''Ada Lovelace''' was an English [[mathematician]] and [[writer|author]].<ref name="a/b">{{cite web|url=http://x.org}}</ref> She worked with [[Charles Babbage]] on the [[Analytical Engine]].<ref name=x/>

== Life ==
[[File:Ada.jpg|thumb|A portrait with [[Babbage]] in it]]
Her father was Lord Byron, a famous poet of the time. Dr. Smith met her in 1833 at a party.
Short bit.

== References ==
{{reflist}}
* Smith, J. (2001). A long book title that has many words. Publisher.

[[Category:Mathematicians]]
[[de:Ada Lovelace]]
"""

_ARTICLE_TWO = """Paris is the capital city of France. It has about 2.1 million inhabitants in the city proper.
"""

_ARTICLE_TOO_SHORT = "Only one sentence lives in this tiny article."


def _write_dump(tmp_path, pages, compress=True, name="dump.xml.bz2"):
    data = _dump_xml(pages)
    path = tmp_path / name
    path.write_bytes(bz2.compress(data) if compress else data)
    return path


_PAGES = [
    ("Ada Lovelace", 0, _ARTICLE_ONE, False),
    ("AccessibleComputing", 0, "#REDIRECT [[Computer accessibility]]", True),
    ("Talk:Ada Lovelace", 1, "Talk pages are not articles at all. "
     "They hold discussions between editors.", False),
    ("Wikipedia:About", 4, "Project pages are not articles. No way.", False),
    ("Tiny", 0, _ARTICLE_TOO_SHORT, False),
    ("Paris", 0, _ARTICLE_TWO, False),
]

_EXPECTED_CORPUS = (
    "Ada Lovelace was an English mathematician and author.\n"
    "She worked with Charles Babbage on the Analytical Engine.\n"
    "Her father was Lord Byron, a famous poet of the time.\n"
    "Dr. Smith met her in 1833 at a party.\n"
    "\n"
    "Paris is the capital city of France.\n"
    "It has about 2.1 million inhabitants in the city proper.\n")


# -- cleaning --------------------------------------------------------------

def test_nested_templates_and_tables_are_dropped():
    text = ("Before {{outer|a={{inner|{{deepest}}}}|b=c}} after.\n"
            "{| class=wikitable\n|-\n| cell {{t}} || {|\n| nested\n|}\n|}\n"
            "Tail text here.")
    assert wc.clean_wikitext(text) == ["Before after.", "Tail text here."]


def test_unclosed_template_drops_only_the_rest_of_its_line():
    text = "Kept words {{broken|template\nNext line survives."
    assert wc.clean_wikitext(text) == ["Kept words Next line survives."]
    assert wc.clean_wikitext("A stray }} closer.") == ["A stray closer."]


def test_links_show_their_labels():
    text = ("[[Paris]] and [[Paris, Texas|the Texan one]] and "
            "[[Paris (mythology)|]] and [[:Category:Cities]] and "
            "[[wikt:ville|ville]] and [[Lyon]]s.")
    assert wc.clean_wikitext(text) == [
        "Paris and the Texan one and Paris (mythology) and Category:Cities "
        "and ville and Lyons."]


def test_file_category_and_interlanguage_links_are_dropped():
    text = ("Text [[File:X.jpg|thumb|A caption with [[a link]] and "
            "Bicyclo[1.1.0]butane]] more [[Image:Y.png]] text "
            "[[Category:Things]][[fr:Chose]][[zh-min-nan:Mi̍h]] end.")
    assert wc.clean_wikitext(text) == ["Text more text end."]


def test_link_labels_keep_single_brackets():
    assert wc.clean_wikitext("[[bicyclobutane|Bicyclo[1.1.0]butane]] is a "
                             "compound.") == [
        "Bicyclo[1.1.0]butane is a compound."]


def test_external_links_bold_italic_and_urls():
    text = ("See [http://example.org the site] or [https://x.org] or "
            "http://bare.example.com/page for '''bold''' and ''italic'' and "
            "'''''both'''''.")
    assert wc.clean_wikitext(text) == [
        "See the site or or for bold and italic and both."]


def test_references_comments_and_html():
    text = ('A<ref name="n/1">{{cite|x}}</ref> B<ref name=z /> C<!-- hidden '
            'text --> H<sub>2</sub>O <span style="x">kept</span><br/>'
            '<math>x^2</math>D<references/>.')
    assert wc.clean_wikitext(text) == ["A B C H2O kept D."]


def test_entities_are_unescaped_after_tags_are_removed():
    # "&lt;ref&gt;" in wikitext is text that shows as "<ref>", not a tag.
    text = "Fish &amp; chips&nbsp;cost &lt;ref&gt; five &quot;pounds&quot;."
    assert wc.clean_wikitext(text) == [
        'Fish & chips cost <ref> five "pounds".']


def test_headings_lists_and_paragraphs():
    text = ("Intro line one\nstill intro.\n\n== History ==\nHistory text.\n"
            "* first item\n** nested item\n# numbered item\n: indented\n"
            "=== Sub ===\nSub text.")
    assert wc.clean_wikitext(text) == [
        "Intro line one still intro.", "History text.", "first item",
        "nested item", "numbered item", "indented", "Sub text."]


def test_trailing_sections_and_their_subsections_are_skipped():
    text = ("Body.\n== See also ==\n* [[Other]]\n=== More ===\nGone.\n"
            "== Legacy ==\nKept again.\n== External links ==\n* link")
    assert wc.clean_wikitext(text) == ["Body.", "Kept again."]


def test_leftovers_of_removed_markup_are_tidied():
    text = ("Anarchism ({{IPAc-en|ˈ|æ}}; from Greek) is a thing {{x}}, "
            "really ().")
    assert wc.clean_wikitext(text) == [
        "Anarchism (from Greek) is a thing, really."]


# -- sentence splitting ----------------------------------------------------

@pytest.mark.parametrize("paragraph, expected", [
    ("One sentence here. Another one here! A third? Yes.",
     ["One sentence here.", "Another one here!", "A third?", "Yes."]),
    ('He said "Stop." Then he left. (It rained.) "Why?" she asked.',
     ['He said "Stop."', "Then he left.", "(It rained.)",
      '"Why?" she asked.']),
    ("Mr. Smith and Dr. Jones met St. Paul in the U.S. Army.",
     ["Mr. Smith and Dr. Jones met St. Paul in the U.S. Army."]),
    ("Some fruits, e.g. Apples, and i.e. Pears grow. They are sweet.",
     ["Some fruits, e.g. Apples, and i.e. Pears grow.", "They are sweet."]),
    ("J. R. R. Tolkien wrote it. George W. Bush did not.",
     ["J. R. R. Tolkien wrote it.", "George W. Bush did not."]),
    ("It grew by 3.5 percent. The rest is 96.5 percent.",
     ["It grew by 3.5 percent.", "The rest is 96.5 percent."]),
    ("It ended in 1945. 1946 began calmly.",
     ["It ended in 1945. 1946 began calmly."]),
    ("see p. 5 and the next. but lower case does not split.",
     ["see p. 5 and the next. but lower case does not split."]),
    ("Bread, milk, etc. Then we went home.",
     ["Bread, milk, etc.", "Then we went home."]),
    ("Wait... What happened?", ["Wait...", "What happened?"]),
    ("Über alles. Éclair next.", ["Über alles.", "Éclair next."]),
    ("", []),
])
def test_split_sentences(paragraph, expected):
    assert wc.split_sentences(paragraph) == expected


def test_article_sentences_drop_short_fragments():
    text = "This sentence has five words. Too short. Another one with words."
    assert wc.article_sentences(text) == [
        "This sentence has five words.", "Another one with words."]
    assert wc.article_sentences(text, min_sentence_words=2) == [
        "This sentence has five words.", "Too short.",
        "Another one with words."]


# -- reading dumps ---------------------------------------------------------

@pytest.mark.parametrize("compress", [True, False])
def test_iter_articles_skips_redirects_and_other_namespaces(tmp_path,
                                                             compress):
    path = _write_dump(tmp_path, _PAGES, compress=compress,
                       name="dump.bz2" if compress else "dump.xml")
    titles = [title for title, _ in wc.iter_articles(path)]
    assert titles == ["Ada Lovelace", "Tiny", "Paris"]


def test_iter_articles_without_ns_elements_uses_title_prefixes(tmp_path):
    pages = [("Talk:Thing", None, "Talk text.", False),
             ("Thing", None, "Article text.", False),
             ("Odd: a title", None, "Also an article.", False),
             ("Moved", None, "#redirect [[Thing]]", False)]
    path = _write_dump(tmp_path, pages)
    assert [t for t, _ in wc.iter_articles(path)] == ["Thing",
                                                      "Odd: a title"]


def test_missing_dump_is_named(tmp_path):
    missing = tmp_path / "nope.xml.bz2"
    with pytest.raises(FileNotFoundError, match="nope.xml.bz2 does not exist"):
        list(wc.iter_articles(missing))


def test_corrupt_bz2_is_named(tmp_path):
    path = tmp_path / "bad.bz2"
    path.write_bytes(b"BZh91AY&SY" + b"\x00" * 50)
    with pytest.raises(ValueError, match=r"bad\.bz2: cannot read the "
                                         r"bz2-compressed dump"):
        list(wc.iter_articles(path))


def test_truncated_bz2_is_named(tmp_path):
    path = tmp_path / "cut.bz2"
    path.write_bytes(bz2.compress(_dump_xml(_PAGES))[:-40])
    with pytest.raises(ValueError, match=r"cut\.bz2: cannot read"):
        list(wc.iter_articles(path))


def test_malformed_xml_names_file_and_line(tmp_path):
    path = tmp_path / "broken.xml"
    path.write_bytes(b"<mediawiki>\n<page>\n<title>A</title>\n</oops>\n")
    with pytest.raises(ValueError, match=r"broken\.xml, line 4, column 3: "
                                         r"not a valid MediaWiki XML dump "
                                         r"\(mismatched tag\)"):
        list(wc.iter_articles(path))


def test_invalid_utf8_names_file_and_line(tmp_path):
    path = tmp_path / "latin1.xml"
    path.write_bytes(b"<mediawiki>\n<page><title>A</title>\n"
                     b"<revision><text>caf\xe9</text></revision>"
                     b"</page>\n</mediawiki>\n")
    with pytest.raises(ValueError, match=r"latin1\.xml, line 3, column \d+: "
                                         r"not a valid MediaWiki XML dump "
                                         r"\(not well-formed"):
        list(wc.iter_articles(path))


def test_non_integer_namespace_names_file_and_page(tmp_path):
    path = _write_dump(tmp_path, [("Thing", "main", "Text.", False)])
    with pytest.raises(ValueError, match=r"dump\.xml\.bz2, page 'Thing': "
                                         r"<ns> is not an integer \('main'\)"):
        list(wc.iter_articles(path))


def test_other_xml_is_not_a_dump(tmp_path):
    path = tmp_path / "feed.xml"
    path.write_bytes(b"<rss><channel/></rss>")
    with pytest.raises(ValueError, match=r"feed\.xml is not a MediaWiki XML "
                                         r"dump: its root element is <rss>"):
        list(wc.iter_articles(path))


# -- writing the corpus ----------------------------------------------------

def test_write_corpus_writes_googles_format(tmp_path):
    dump = _write_dump(tmp_path, _PAGES)
    output = tmp_path / "corpus.txt"
    stats = wc.write_corpus(dump, output)
    assert output.read_text(encoding="utf-8") == _EXPECTED_CORPUS
    assert stats == wc.CorpusStats(
        articles_read=3, documents=2, sentences=6,
        bytes=len(_EXPECTED_CORPUS.encode("utf-8")))
    # Nothing but the corpus is left behind (no temporary file).
    assert sorted(os.listdir(tmp_path)) == ["corpus.txt", "dump.xml.bz2"]


def test_write_corpus_is_deterministic_and_honours_max_documents(tmp_path):
    dump = _write_dump(tmp_path, _PAGES)
    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    wc.write_corpus(dump, first)
    wc.write_corpus(dump, second)
    assert first.read_bytes() == second.read_bytes()
    stats = wc.write_corpus(dump, tmp_path / "one.txt", max_documents=1)
    assert stats.documents == 1
    assert (tmp_path / "one.txt").read_text(encoding="utf-8") == (
        _EXPECTED_CORPUS.split("\n\n")[0] + "\n")


def test_write_corpus_with_no_document_fails_and_keeps_old_output(tmp_path):
    dump = _write_dump(tmp_path, [("Tiny", 0, _ARTICLE_TOO_SHORT, False)])
    output = tmp_path / "corpus.txt"
    output.write_text("previous corpus\n")
    with pytest.raises(ValueError, match=r"no document in .*dump\.xml\.bz2: "
                                         r"1 articles read, none with 2 or "
                                         r"more sentences"):
        wc.write_corpus(dump, output)
    assert output.read_text() == "previous corpus\n"
    assert sorted(os.listdir(tmp_path)) == ["corpus.txt", "dump.xml.bz2"]


def test_write_corpus_rejects_missing_output_directory(tmp_path):
    dump = _write_dump(tmp_path, _PAGES)
    with pytest.raises(FileNotFoundError, match="directory .*nowhere does "
                                                "not exist"):
        wc.write_corpus(dump, tmp_path / "nowhere" / "corpus.txt")


def test_find_gensim_wiki_dump_explains_how_to_install(monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(FileNotFoundError,
                       match=r"pip install --no-deps gensim==4\.4\.0"):
        wc.find_gensim_wiki_dump()


# -- command line ----------------------------------------------------------

def test_cli_writes_corpus_and_reports(tmp_path, capsys):
    dump = _write_dump(tmp_path, _PAGES)
    output = tmp_path / "corpus.txt"
    stats = prepare_corpus.main([f"--output_file={output}",
                                 f"--wiki_dump={dump}", "--max_documents=5"])
    assert stats.documents == 2
    assert output.read_text(encoding="utf-8") == _EXPECTED_CORPUS
    assert "2 documents, 6 sentences" in capsys.readouterr().out


def test_cli_reports_bad_dump_without_traceback(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        prepare_corpus.main([f"--output_file={tmp_path / 'c.txt'}",
                             f"--wiki_dump={tmp_path / 'absent.bz2'}"])
    # sys.exit(message): status 1, the message on stderr.
    assert exit_info.value.code == (
        f"python -m bert_tf.prepare_corpus: error: Wikipedia dump "
        f"{tmp_path / 'absent.bz2'} does not exist")


# -- the real dump ---------------------------------------------------------

def _gensim_dump_or_skip():
    try:
        return wc.find_gensim_wiki_dump()
    except FileNotFoundError as error:
        pytest.skip(str(error))


@pytest.mark.slow
def test_gensim_dump_yields_a_clean_corpus(tmp_path):
    output = tmp_path / "corpus.txt"
    stats = wc.write_corpus(_gensim_dump_or_skip(), output)
    assert stats.articles_read == 106
    assert stats.documents >= 100
    assert stats.sentences > 15000
    assert stats.bytes > 2_000_000
    documents = output.read_text(encoding="utf-8").split("\n\n")
    assert len(documents) == stats.documents
    for document in documents:
        sentences = document.strip("\n").split("\n")
        assert len(sentences) >= 2
        for sentence in sentences:
            assert len(sentence.split()) >= 4, sentence
            for markup in ("{{", "}}", "[[", "]]", "<ref", "&amp;", "'''",
                           "http://", "https://"):
                assert markup not in sentence, sentence
    assert documents[0].startswith(
        "Anarchism is a political philosophy that advocates self-governed "
        "societies based on voluntary institutions.\n")
