"""Google's sliding windows and max-context owners (`bert_tf.data.windows`),
worked by hand; SQuAD's and the tagger's features both cut documents so.
The in-graph `sliding_windows` is held to them through the raw-text exports,
whose answers and tags tests/test_export_saved_model.py compares with the
runners'."""

from bert_tf.data import windows


def test_doc_spans_by_hand():
    spans = windows.doc_spans(10, max_tokens_for_doc=4, doc_stride=2)
    assert [tuple(s) for s in spans] == [(0, 4), (2, 4), (4, 4), (6, 4)]
    # The last window ends at the document's end, even if it overlaps more.
    spans = windows.doc_spans(7, max_tokens_for_doc=4, doc_stride=2)
    assert [tuple(s) for s in spans] == [(0, 4), (2, 4), (4, 3)]
    # A stride longer than a window never skips pieces.
    spans = windows.doc_spans(9, max_tokens_for_doc=4, doc_stride=6)
    assert [tuple(s) for s in spans] == [(0, 4), (4, 4), (8, 1)]
    assert windows.doc_spans(3, 4, 2) == [(0, 3)]
    assert windows.doc_spans(0, 4, 2) == []


def test_max_context_by_hand():
    spans = windows.doc_spans(10, 4, 2)
    # Piece 3: span 0 gives min(3, 0) = 0, span 1 gives min(1, 2) = 1.
    # Piece 5: span 1 gives min(3, 0), span 2 gives min(1, 2): span 2.
    assert windows.max_context_owners(spans, 10) == [
        0, 0, 0, 1, 1, 2, 2, 3, 3, 3]
    # A tie (both windows leave piece 3 no context on one side, same
    # length) goes to the first window.
    spans = [windows.DocSpan(0, 4), windows.DocSpan(3, 4)]
    assert windows.max_context_owners(spans, 7)[3] == 0
    # The 0.01 * length term breaks ties towards the longer window.
    spans = [windows.DocSpan(0, 3), windows.DocSpan(2, 5)]
    assert windows.max_context_owners(spans, 7)[2] == 1
