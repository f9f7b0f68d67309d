"""create_pretraining_data's default worker count follows the input size
and the free cores.

Small inputs run in one process (workers would only add start-up cost, so
the default is never slower than --num_workers=1); one worker per 2 MB of
input, at most one per core that the load average leaves free. Reference:
the sizes and loads, computed by hand.
"""

from bert_tf.pretraining import corpus as pretraining_corpus

MB = 1 << 20


def _sized_file(path, size):
    with open(path, "wb") as writer:
        writer.truncate(size)  # Sparse: the size without writing it.
    return str(path)


def _workers(files, cores, load_average=0.0):
    return pretraining_corpus.auto_num_workers(files, cores=cores,
                                               load_average=load_average)


def test_small_input_runs_in_one_process(tmp_path):
    small = _sized_file(tmp_path / "a.txt", 1 * MB)
    assert _workers([small], cores=16) == 1


def test_one_worker_per_2_mb_up_to_the_cores(tmp_path):
    files = [_sized_file(tmp_path / f"{i}.txt", 3 * MB) for i in range(3)]
    assert _workers(files, cores=16) == 4  # 9 MB
    assert _workers(files, cores=2) == 2
    assert _workers(files[:1], cores=16) == 1


def test_busy_cores_are_not_counted(tmp_path):
    files = [_sized_file(tmp_path / f"{i}.txt", 10 * MB) for i in range(3)]
    assert _workers(files, cores=16, load_average=0.9) == 15
    assert _workers(files, cores=16, load_average=12.5) == 4
    assert _workers(files, cores=2, load_average=1.2) == 1
    assert _workers(files, cores=2, load_average=11.0) == 1


def test_unsized_input_counts_as_large(tmp_path):
    assert _workers(["gs://bucket/shard.txt"], cores=4) == 4


def test_blocks_of_any_size_give_the_same_corpus(tmp_path, monkeypatch,
                                                 golden_dir,
                                                 uncased_vocab_file):
    from bert_tf.text import tokenization
    tokenizer = tokenization.FullTokenizer(str(uncased_vocab_file), True)
    text = (golden_dir / "create_pretraining_data" / "corpus.txt").read_bytes()
    # Invalid UTF-8, a document break and a line without final newline at
    # the end, so blocks cut through all of them somewhere.
    corpus_file = tmp_path / "corpus.txt"
    corpus_file.write_bytes(text + b"bad \xff byte\n\n\nlast line")

    def corpus_arrays():
        corpus = pretraining_corpus.tokenize_corpus([str(corpus_file)],
                                                    tokenizer)
        return (corpus.token_ids.tolist(), corpus.sentence_starts.tolist(),
                corpus.document_starts.tolist())

    whole = corpus_arrays()  # The file is smaller than one block.
    assert len(text) < pretraining_corpus._MIN_BLOCK_BYTES
    for block_bytes in (1, 7, 100, 4096):
        monkeypatch.setattr(pretraining_corpus, "_MIN_BLOCK_BYTES",
                            block_bytes)
        monkeypatch.setattr(pretraining_corpus, "_BLOCK_BYTES", block_bytes)
        assert corpus_arrays() == whole, block_bytes
