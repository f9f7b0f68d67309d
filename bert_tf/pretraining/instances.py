"""Pretraining instances, exactly as Google's `create_pretraining_data.py`.

For the same corpus, vocabulary, flags and seed this makes the same instances,
in the same order, with the same masks as Google's script: it makes the same
calls, in the same order, on one `random.Random(random_seed)`:

1. `rng.shuffle(documents)`.
2. `dupe_factor` times, for each document in (shuffled) order, the instances
   of that document (`_append_all_instances`, Google's
   `create_instances_from_document`): a target length (`short_seq_prob` of
   the time a random one), chunks of whole sentences, a random split into
   A and B, half of the time (always for a one-sentence chunk) a random next
   B from another document with the unused sentences put back, the pair
   truncated at random ends, then masked.
3. `rng.shuffle(instances)`.

Where the C extension is built (`pip install` with a C compiler), step 2
runs in C (`_pretraining_native.c`: `_append_all_instances` line for line,
drawing from a replica of the same generator, `exact_random`) and the
shuffles too; without it, in Python. The records are the same either way.

Masking (Google's `create_masked_lm_predictions`): every position but
[CLS]/[SEP] is a candidate (with whole-word masking a "##" piece joins the
previous candidate's group, and so does, with a Chinese word segmentation,
a CJK character of the same word: `chinese_words`), the candidates are
shuffled and taken in order until
`min(max_predictions_per_seq, max(1, round(len * masked_lm_prob)))`
positions are masked; each is [MASK] 80% of the time, kept 10%, a random
vocabulary word 10%.

What is held, and why it is small: the corpus is one array of token ids
(`TokenizedCorpus`), and A and B are always runs of consecutive sentences, so
an instance is just where its A and B start in that array, their lengths
after truncation, the next-sentence label, and its masked positions with the
id each gets (or "keep"). `InstanceStore` keeps these numbers in flat
`array`s of the narrowest type that holds them: 32 + 6 * (masked
positions) bytes an instance, plus 4 for its place in the write order
(about 150 bytes with max_predictions_per_seq=20; corpora of 2**31 tokens
or more take 24 bytes more),
where Google's script holds every instance's tokens as lists of Python
strings (kilobytes an instance), `dupe_factor` times over. The final shuffle
permutes an array of instance indices of the same length as Google's list
of instances: the same call on the RNG, the same permutation. Records are
then built in batches, in that order, as they are written.
"""

import multiprocessing
import os
import random
from array import array

from absl import logging
import numpy as np

from bert_tf import progress as progress_lib
from bert_tf.data import tfrecord_files
from bert_tf.pretraining import corpus as pretraining_corpus
from bert_tf.pretraining import exact_random
from bert_tf.pretraining import records as pretraining_records
from bert_tf.pretraining.errors import PretrainingDataError

CLS_TOKEN = "[CLS]"
SEP_TOKEN = "[SEP]"
MASK_TOKEN = "[MASK]"

# Stands for "the original token" among the replacement ids of masked
# positions (the 10% of positions that keep their token).
KEEP_ORIGINAL = -1

# Values stored per instance in `InstanceStore.fields`.
_FIELDS_PER_INSTANCE = 6

# Documents per call of the C instance loop (a few MB of instances).
_DOCUMENTS_PER_NATIVE_CALL = 2048


class PretrainingVocab:
    """What instance creation needs from a vocabulary.

    Attributes:
      words: the vocabulary's tokens in file order (Google's `vocab_words`,
        from which random replacements are drawn).
      word_ids: the id of each of `words`.
      cls_id, sep_id, mask_id: ids of [CLS], [SEP], [MASK].
      id_to_token: id -> token, for logging.
      is_continuation: `bytearray`, 1 at the id of each "##" piece.
    """

    def __init__(self, vocab, vocab_file="the vocabulary"):
        """Args:
          vocab: an ordered token -> id mapping (`FullTokenizer.vocab`).
          vocab_file: its file, for messages.

        Raises:
          PretrainingDataError: [CLS], [SEP] or [MASK] is missing (all
            missing ones are named, with the file).
        """
        missing = [token for token in (CLS_TOKEN, SEP_TOKEN, MASK_TOKEN)
                   if token not in vocab]
        if missing:
            raise PretrainingDataError(
                f"vocab file {vocab_file} lacks {', '.join(missing)}, which "
                f"pretraining instances need")
        self.words = list(vocab.keys())
        self.word_ids = [vocab[word] for word in self.words]
        self.cls_id = vocab[CLS_TOKEN]
        self.sep_id = vocab[SEP_TOKEN]
        self.mask_id = vocab[MASK_TOKEN]
        self.id_to_token = {index: token for token, index in vocab.items()}
        self.is_continuation = bytearray(max(vocab.values()) + 1)
        for token, index in vocab.items():
            if token.startswith("##"):
                self.is_continuation[index] = 1


class InstanceStore:
    """Instances as flat arrays of numbers (see the module docstring).

    Instance k is `fields[6k:6k+6]` = (A's start in the corpus token array,
    A's length, B's start, B's length, next-sentence label, number of masked
    positions n), and, with o = `mask_offsets[k]`, `positions[o:o+n]`: the
    n masked positions in the order they were drawn, and
    `replacements[o:o+n]`: the id each gets (`KEEP_ORIGINAL` for none).
    """

    def __init__(self, num_tokens, max_seq_length):
        """Args:
          num_tokens: tokens in the corpus (fields index into it).
          max_seq_length: positions are below it.
        """
        # 4-byte fields unless a corpus position could need 8.
        self.fields = array("i" if num_tokens < 2 ** 31 else "q")
        self.positions = array("H" if max_seq_length <= 1 << 16 else "i")
        self.replacements = array("i")
        self.mask_offsets = array("q", [0])

    def __len__(self):
        return len(self.mask_offsets) - 1

    def append_packed(self, fields, positions, replacements):
        """Appends instances given as bytes: int64 `fields` (6 an
        instance), int32 masked `positions` and `replacements`."""
        fields = np.frombuffer(fields, dtype=np.int64)
        self.fields.frombytes(
            fields.astype(f"i{self.fields.itemsize}").tobytes())
        self.positions.frombytes(np.frombuffer(
            positions, dtype=np.int32).astype(
                np.uint16 if self.positions.typecode == "H"
                else np.int32).tobytes())
        self.replacements.frombytes(replacements)
        counts = fields[_FIELDS_PER_INSTANCE - 1::_FIELDS_PER_INSTANCE]
        self.mask_offsets.frombytes(
            (self.mask_offsets[-1] + np.cumsum(counts)).astype(
                np.int64).tobytes())


def validate_arguments(max_seq_length, dupe_factor, short_seq_prob,
                       masked_lm_prob, max_predictions_per_seq):
    """Raises PretrainingDataError naming a flag out of range."""
    if max_seq_length < 5:
        raise PretrainingDataError(
            f"max_seq_length must be at least 5 ([CLS] A [SEP] B [SEP] with "
            f"A and B of at least one token each; Google's algorithm also "
            f"draws target lengths of at least 2 tokens), got "
            f"{max_seq_length}")
    if dupe_factor < 1:
        raise PretrainingDataError(
            f"dupe_factor must be at least 1, got {dupe_factor}")
    if max_predictions_per_seq < 0:
        raise PretrainingDataError(
            f"max_predictions_per_seq must be >= 0, got "
            f"{max_predictions_per_seq}")
    for name, value in (("short_seq_prob", short_seq_prob),
                        ("masked_lm_prob", masked_lm_prob)):
        if not 0.0 <= value <= 1.0:
            raise PretrainingDataError(
                f"{name} must be a probability in [0, 1], got {value}")


def create_training_instances(corpus, vocab, rng, max_seq_length,
                              dupe_factor, short_seq_prob, masked_lm_prob,
                              max_predictions_per_seq,
                              do_whole_word_mask=False, sentence_order=False):
    """All instances of `corpus`, and the order Google's script writes them.

    Args:
      corpus: a `TokenizedCorpus` (documents in reading order).
      vocab: a `PretrainingVocab`.
      rng: the `random.Random(random_seed)` that drives everything.
      max_seq_length, dupe_factor, short_seq_prob, masked_lm_prob,
        max_predictions_per_seq, do_whole_word_mask: Google's flags.
      sentence_order: ALBERT's sentence-order prediction (SOP) pairs
        instead of Google's next-sentence pairs: chunks are made as
        Google's, A is the chunk's first `a_end` sentences (one draw, as
        Google's) and B always the rest of the chunk -- a one-sentence
        chunk is split after `1 + randbelow(length - 1)` tokens, a
        one-token one makes no instance -- then one `random() < 0.5` swaps
        them: [CLS] B [SEP] A [SEP], label 1 (0: in order). Truncation and
        masking are Google's. Runs in Python (the C loop is Google's
        only). False (the default): Google's records, byte for byte.

    Returns:
      (store, order): an `InstanceStore` with the instances in creation
      order, and an `array` of their indices in the (shuffled) order to
      write them.

    Raises:
      PretrainingDataError: an argument out of range.
    """
    validate_arguments(max_seq_length, dupe_factor, short_seq_prob,
                       masked_lm_prob, max_predictions_per_seq)
    num_documents = corpus.num_documents
    if num_documents == 1:
        logging.warning(
            "The input (%s) holds a single document: random next sentences "
            "then come from that same document, as in Google's script. "
            "Separate documents with empty lines.",
            ", ".join(map(str, corpus.input_files)))
    with exact_random.replayed(rng, max_seq_length) as draws:
        # Google shuffles its list of documents; shuffling their indices is
        # the same call on a list of the same length: the same permutation.
        document_order = list(range(num_documents))
        draws.shuffle(document_order)
        document_starts = corpus.document_starts
        first_sentence = [document_starts[d] for d in document_order]
        num_sentences = [document_starts[d + 1] - document_starts[d]
                         for d in document_order]
        store = InstanceStore(corpus.num_tokens, max_seq_length)
        # One pass over the documents per --dupe_factor.
        progress = progress_lib.Progress(
            "create_pretraining_data: instances", total=dupe_factor,
            unit="pass")
        progress.start(f"{num_documents} documents, --dupe_factor="
                       f"{dupe_factor}")
        # The C loop is Google's algorithm only: sentence-order pairs are
        # made by the Python loop.
        native_loop = (None if sentence_order
                       else exact_random.native_instance_loop(draws))
        if native_loop is not None:
            # The same pass in C (bert_tf/pretraining/_native.c).
            native_arguments = (
                draws, corpus.sentence_starts, corpus.token_ids,
                array("q", first_sentence), array("q", num_sentences),
                array("i", vocab.word_ids), vocab.is_continuation,
                corpus.joins_previous, array("q", _num_to_predict_table(
                    max_seq_length, masked_lm_prob,
                    max_predictions_per_seq)),
                max_seq_length, short_seq_prob, vocab.mask_id,
                do_whole_word_mask)
        for done in range(1, dupe_factor + 1):
            if native_loop is not None:
                # Documents in ranges: the bytes of one range at a time,
                # and Ctrl-C is seen between ranges.
                for first in range(0, num_documents,
                                   _DOCUMENTS_PER_NATIVE_CALL):
                    store.append_packed(*native_loop(
                        *native_arguments, first,
                        min(first + _DOCUMENTS_PER_NATIVE_CALL,
                            num_documents)))
            else:
                _append_all_instances(
                    store, corpus, vocab, draws, first_sentence,
                    num_sentences, max_seq_length, short_seq_prob,
                    masked_lm_prob, max_predictions_per_seq,
                    do_whole_word_mask, sentence_order)
            progress.update(done, note=f"{len(store)} instances")
        progress.close(note=f"{len(store)} instances")
        order = array("i" if len(store) < 2 ** 31 else "q",
                      range(len(store)))
        draws.shuffle(order)
    return store, order


def _num_to_predict_table(max_seq_length, masked_lm_prob,
                          max_predictions_per_seq):
    """Google's num_to_predict for every sequence length up to the max."""
    return [min(max_predictions_per_seq,
                max(1, int(round(length * masked_lm_prob))))
            for length in range(max_seq_length + 1)]


def _append_all_instances(store, corpus, vocab, draws, first_sentence,
                          num_sentences, max_seq_length, short_seq_prob,
                          masked_lm_prob, max_predictions_per_seq,
                          do_whole_word_mask, sentence_order=False):
    """One pass of Google's `create_instances_from_document` over all docs.

    `draws` (`exact_random.replayed`) makes the draws of Google's RNG. With
    `sentence_order`, pairs are ALBERT's sentence-order pairs instead of
    next-sentence pairs (see `create_training_instances`).
    Sentences of a document are consecutive in the corpus token array, so a
    chunk, its A and its B are (start, length) pairs into that array.
    """
    # Bound methods and locals: this loop runs once per sentence, and its
    # cost is mostly the RNG calls Google's algorithm makes.
    uniform = draws.random
    # Google's `rng.randint(a, b)` is exactly `a + randbelow(b - a + 1)`
    # (that is how `randrange` computes it), minus its argument checks.
    randbelow = draws.randbelow
    shuffle = draws.shuffle
    sentence_starts = corpus.sentence_starts
    tokens = corpus.token_ids
    num_documents = len(first_sentence)
    max_num_tokens = max_seq_length - 3
    num_words = len(vocab.word_ids)
    word_ids = vocab.word_ids
    mask_id = vocab.mask_id
    num_to_predict_for_length = _num_to_predict_table(
        max_seq_length, masked_lm_prob, max_predictions_per_seq)
    fields_extend = store.fields.extend
    positions_extend = store.positions.extend
    replacements_extend = store.replacements.extend
    mask_offsets_append = store.mask_offsets.append
    stored_positions = store.positions
    is_continuation = vocab.is_continuation
    # With a Chinese word segmentation: CJK characters joining their word.
    joins_previous = corpus.joins_previous

    for document_index in range(num_documents):
        first = first_sentence[document_index]
        count = num_sentences[document_index]
        target_seq_length = max_num_tokens
        if uniform() < short_seq_prob:
            target_seq_length = 2 + randbelow(max_num_tokens - 1)
        chunk_first = 0  # The chunk's first sentence (within the document).
        chunk_start = sentence_starts[first]  # Its first token.
        i = 0
        while i < count:
            chunk_end = sentence_starts[first + i + 1]
            if i == count - 1 or chunk_end - chunk_start >= target_seq_length:
                chunk_size = i - chunk_first + 1
                a_end = 1
                if chunk_size >= 2:
                    a_end = 1 + randbelow(chunk_size - 1)
                a_start = chunk_start
                a_length = (sentence_starts[first + chunk_first + a_end]
                            - a_start)
                if sentence_order:
                    # ALBERT's sentence-order pair: B is the rest of the
                    # chunk (a one-sentence chunk is split at a random
                    # token), and half of the time the two are swapped.
                    if chunk_size == 1:
                        chunk_length = chunk_end - chunk_start
                        if chunk_length < 2:
                            # One token: no pair to order.
                            chunk_first = i + 1
                            chunk_start = sentence_starts[first + chunk_first]
                            i += 1
                            continue
                        a_length = 1 + randbelow(chunk_length - 1)
                    b_start = a_start + a_length
                    b_length = chunk_end - b_start
                    is_random_next = 0
                    if uniform() < 0.5:
                        is_random_next = 1  # The label: swapped.
                        a_start, a_length, b_start, b_length = (
                            b_start, b_length, a_start, a_length)
                elif chunk_size == 1 or uniform() < 0.5:
                    is_random_next = 1
                    target_b_length = target_seq_length - a_length
                    # Up to 10 tries for another document; after 10 the last
                    # draw is used even if it is this one (as Google's).
                    for _ in range(10):
                        random_document = randbelow(num_documents)
                        if random_document != document_index:
                            break
                    random_first = first_sentence[random_document]
                    random_end = random_first + num_sentences[random_document]
                    sentence = random_first + randbelow(
                        num_sentences[random_document])
                    b_start = sentence_starts[sentence]
                    sentence += 1
                    b_end = sentence_starts[sentence]
                    while (b_end - b_start < target_b_length
                           and sentence < random_end):
                        sentence += 1
                        b_end = sentence_starts[sentence]
                    b_length = b_end - b_start
                    # The chunk's sentences after A go back to the document.
                    i -= chunk_size - a_end
                else:
                    is_random_next = 0
                    b_start = a_start + a_length
                    b_length = chunk_end - b_start

                # Google's truncate_seq_pair: cut the longer side (B on a
                # tie) at its front or back until the pair fits.
                while a_length + b_length > max_num_tokens:
                    if a_length > b_length:
                        if uniform() < 0.5:
                            a_start += 1
                        a_length -= 1
                    else:
                        if uniform() < 0.5:
                            b_start += 1
                        b_length -= 1

                # Masking. Candidates: A at positions 1..a_length, B after
                # the first [SEP].
                b_offset = a_length + 2
                num_to_predict = num_to_predict_for_length[
                    a_length + b_length + 3]
                candidates = list(range(1, a_length + 1))
                candidates.extend(range(b_offset, b_offset + b_length))
                if do_whole_word_mask:
                    positions = _whole_word_positions(
                        candidates, tokens, a_start, b_start, b_offset,
                        is_continuation, joins_previous, shuffle,
                        num_to_predict)
                else:
                    shuffle(candidates)
                    positions = candidates[:num_to_predict]
                replacements = []
                append = replacements.append
                for _ in positions:
                    if uniform() < 0.8:
                        append(mask_id)
                    elif uniform() < 0.5:
                        append(KEEP_ORIGINAL)
                    else:
                        append(word_ids[randbelow(num_words)])
                fields_extend((a_start, a_length, b_start, b_length,
                               is_random_next, len(positions)))
                positions_extend(positions)
                replacements_extend(replacements)
                mask_offsets_append(len(stored_positions))

                chunk_first = i + 1
                chunk_start = sentence_starts[first + chunk_first]
            i += 1


def _whole_word_positions(candidates, tokens, a_start, b_start, b_offset,
                          is_continuation, joins_previous, shuffle,
                          num_to_predict):
    """Positions to mask with whole-word masking, in Google's draw order.

    A "##" piece joins the group of the candidate before it (even across
    the [SEP] between A and B, as in Google's code), and so does, with a
    Chinese word segmentation (`joins_previous` not None), a CJK character
    of the same word as the character before it; the groups are shuffled
    and taken whole, skipping any that would exceed `num_to_predict`.
    """
    groups = []
    for position in candidates:
        if position < b_offset:
            index = a_start + position - 1
        else:
            index = b_start + position - b_offset
        if groups and (is_continuation[tokens[index]] or (
                joins_previous is not None and joins_previous[index])):
            groups[-1].append(position)
        else:
            groups.append([position])
    shuffle(groups)
    positions = []
    for group in groups:
        if len(positions) >= num_to_predict:
            break
        if len(positions) + len(group) > num_to_predict:
            continue
        positions.extend(group)
    return positions


def _instance_ids(store, index, tokens, cls_id, sep_id):
    """Ids of instance `index`: (input_ids, a_length, b_length,
    masked_lm_positions, masked_lm_ids, next_sentence_label), unpadded, the
    positions sorted."""
    base = _FIELDS_PER_INSTANCE * index
    (a_start, a_length, b_start, b_length, is_random_next,
     count) = store.fields[base:base + _FIELDS_PER_INSTANCE]
    input_ids = [cls_id]
    input_ids += tokens[a_start:a_start + a_length]
    input_ids.append(sep_id)
    input_ids += tokens[b_start:b_start + b_length]
    input_ids.append(sep_id)
    offset = store.mask_offsets[index]
    pairs = sorted(zip(store.positions[offset:offset + count],
                       store.replacements[offset:offset + count]))
    masked_lm_positions = [position for position, _ in pairs]
    masked_lm_ids = [input_ids[position] for position in masked_lm_positions]
    for position, replacement in pairs:
        if replacement != KEEP_ORIGINAL:
            input_ids[position] = replacement
    return (input_ids, a_length, b_length, masked_lm_positions, masked_lm_ids,
            is_random_next)


def instance_features(store, index, corpus, vocab):
    """The unpadded features of instance `index`, as Google writes them.

    Returns:
      (input_ids, segment_ids, masked_lm_positions, masked_lm_ids,
      next_sentence_label): lists of ints (masked positions sorted, with the
      original ids), and the label.
    """
    (input_ids, a_length, b_length, masked_lm_positions, masked_lm_ids,
     label) = _instance_ids(store, index, corpus.token_ids, vocab.cls_id,
                            vocab.sep_id)
    segment_ids = [0] * (a_length + 2) + [1] * (b_length + 1)
    return (input_ids, segment_ids, masked_lm_positions, masked_lm_ids,
            label)


# Records built together by `_BatchRecordEncoder` (a few MB of arrays).
_RECORDS_PER_BATCH = 4096


class _BatchRecordEncoder:
    """Builds and frames the records of many instances at once with numpy.

    The same features as `instance_features` (input ids gathered from the
    corpus around [CLS]/[SEP], masked positions sorted, replacements
    applied), computed for a batch of instances as matrices, serialized
    (`PretrainingExampleEncoder.record_blocks`) as matrices too, leaving a
    slice and a CRC call per record.
    """

    def __init__(self, store, corpus, vocab, encoder):
        self._encoder = encoder
        # Views of the store's arrays (no copies), widened per batch.
        self._fields = np.frombuffer(
            store.fields, dtype=f"i{store.fields.itemsize}").reshape(
                -1, _FIELDS_PER_INSTANCE)
        self._masked_positions = np.frombuffer(
            store.positions, dtype=np.uint16
            if store.positions.typecode == "H" else np.int32)
        self._replacements = np.frombuffer(store.replacements,
                                           dtype=np.int32)
        self._mask_offsets = np.frombuffer(store.mask_offsets, dtype=np.int64)
        self._tokens = np.frombuffer(corpus.token_ids, dtype=np.int32)
        self._cls_id = vocab.cls_id
        self._sep_id = vocab.sep_id
        self._positions = np.arange(encoder.max_seq_length)

    def features(self, indices):
        """Padded feature matrices of instances `indices`, in that order.

        Returns:
          (input_ids, lengths, segment_ids, masked_lm_positions,
          masked_lm_ids, counts, labels): the arguments of
          `PretrainingExampleEncoder.record_blocks`.
        """
        indices = np.asarray(indices, dtype=np.int64)
        batch = len(indices)
        rows = np.arange(batch)
        # int32 (int64 for corpora of 2**31 tokens or more) throughout.
        fields = self._fields[indices]
        a_start, a_length, b_start, b_length, labels, counts = fields.T
        length = a_length + b_length + 3
        b_first = a_length + 2
        positions = self._positions.astype(fields.dtype)

        # [CLS] A [SEP] B [SEP] and padding, one row per instance: the
        # token of each position in the corpus (A, then B; positions that
        # are no token of A or B read a neighbour and are set below).
        source = np.where(positions <= a_length[:, None],
                          (a_start - 1)[:, None],
                          (b_start - b_first)[:, None]) + positions
        input_ids = np.take(self._tokens, source, mode="clip")
        in_sequence = positions < length[:, None]
        input_ids *= in_sequence
        input_ids[:, 0] = self._cls_id
        input_ids[rows, a_length + 1] = self._sep_id
        input_ids[rows, length - 1] = self._sep_id
        segment_ids = (positions >= b_first[:, None]) & in_sequence

        # Masked positions, sorted within each instance: mark them in a
        # [batch, max_seq_length] map and read it back row by row.
        counts = counts.astype(np.int64)
        slot = np.arange(int(counts.sum())) - np.repeat(
            np.cumsum(counts) - counts, counts)
        stored = np.repeat(self._mask_offsets[indices], counts) + slot
        mask_rows = np.repeat(rows, counts)
        stored_positions = self._masked_positions[stored]
        replacement_map = np.empty(input_ids.shape, dtype=np.int32)
        replacement_map[mask_rows, stored_positions] = (
            self._replacements[stored])
        is_masked = np.zeros(input_ids.shape, dtype=bool)
        is_masked[mask_rows, stored_positions] = True
        masked_rows, masked_positions = np.nonzero(is_masked)
        masked_ids = input_ids[masked_rows, masked_positions]
        replacements = replacement_map[masked_rows, masked_positions]
        input_ids[masked_rows, masked_positions] = np.where(
            replacements == KEEP_ORIGINAL, masked_ids, replacements)
        max_predictions = self._encoder.max_predictions_per_seq
        position_matrix = np.zeros((batch, max_predictions), dtype=np.int32)
        position_matrix[masked_rows, slot] = masked_positions
        masked_id_matrix = np.zeros((batch, max_predictions), dtype=np.int32)
        masked_id_matrix[masked_rows, slot] = masked_ids
        return (input_ids, length, segment_ids, position_matrix,
                masked_id_matrix, counts, labels)

    def frame(self, indices, num_files):
        """Framed records of instances `indices`, spread over files.

        Args:
          indices: instances, in writing order.
          num_files: the number of output files.

        Returns:
          A list of `num_files` framed byte strings: the k-th holds records
          k, k + num_files, ... (see `RoundRobinRecordWriter`).
        """
        return tfrecord_files.frame_laid_out_round_robin(
            *self._laid_out_records(indices), num_files)

    def records(self, indices):
        """The serialized Examples of instances `indices`, in that order."""
        return tfrecord_files.split_records(*self._laid_out_records(indices))

    def _laid_out_records(self, indices):
        return tfrecord_files.records_from_byte_blocks(
            *self._encoder.record_blocks(*self.features(indices)))


# What forked workers of `_FramedSpans` need; set before the fork.
_fork_framer_state = None


def _framed_span(state, span):
    batch_encoder, order, num_files = state
    start, stop = span
    return batch_encoder.frame(order[start:stop], num_files)


def _framed_span_in_worker(span):
    return _framed_span(_fork_framer_state, span)


class _FramedSpans:
    """Framed records of spans of `order`, in order, maybe in processes.

    Building and framing records is pure computation on the instances and
    the corpus, which forked processes share with this one without copying;
    only the framed bytes come back.
    """

    def __init__(self, batch_encoder, order, num_files, num_workers):
        self._state = (batch_encoder, order, num_files)
        self._pool = None
        if (num_workers > 1 and "fork" in
                multiprocessing.get_all_start_methods()):
            global _fork_framer_state
            _fork_framer_state = self._state
            try:
                self._pool = multiprocessing.get_context("fork").Pool(
                    num_workers)
            finally:
                _fork_framer_state = None

    def map(self, spans):
        """Yields the framed bytes (one per file) of each span, in order."""
        if self._pool is None:
            return (_framed_span(self._state, span) for span in spans)
        return self._pool.imap(_framed_span_in_worker, spans)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        if self._pool is not None:
            if exc_info[0] is None:
                self._pool.close()
            else:
                self._pool.terminate()
            self._pool.join()
        return False


def _log_example(vocab, features, max_seq_length, max_predictions_per_seq):
    """Logs one instance as Google's script does (tokens, then features), at
    absl verbosity 1 (`--verbosity=1`): by default the 20 instances were
    192 lines of numbers before any progress."""
    input_ids, segment_ids, positions, masked_ids, label = features
    sequence_padding = [0] * (max_seq_length - len(input_ids))
    prediction_padding = [0] * (max_predictions_per_seq - len(positions))
    logging.vlog(1, "*** Example ***")
    logging.vlog(1, "tokens: %s", " ".join(
        vocab.id_to_token.get(token_id, "[UNK]") for token_id in input_ids))
    values = (
        (pretraining_records.INPUT_IDS, input_ids + sequence_padding),
        (pretraining_records.INPUT_MASK,
         [1] * len(input_ids) + sequence_padding),
        (pretraining_records.SEGMENT_IDS, segment_ids + sequence_padding),
        (pretraining_records.MASKED_LM_POSITIONS,
         positions + prediction_padding),
        (pretraining_records.MASKED_LM_IDS, masked_ids + prediction_padding),
        (pretraining_records.MASKED_LM_WEIGHTS,
         [1.0] * len(positions) + [0.0] * len(prediction_padding)),
        (pretraining_records.NEXT_SENTENCE_LABELS, [label]),
    )
    for name, feature in values:
        logging.vlog(1, "%s: %s", name, " ".join(str(x) for x in feature))


def write_instances_to_example_files(store, order, corpus, vocab,
                                     max_seq_length, max_predictions_per_seq,
                                     output_files, num_logged_examples=20,
                                     num_workers=1):
    """Writes the instances as `tf.train.Example` TFRecords, round-robin.

    Record i (in `order`) goes to `output_files[i % len(output_files)]`, as
    in Google's script, which also logs the first 20 instances and the
    total. The files appear only when all are complete.

    Args:
      store, order: from `create_training_instances`.
      corpus: the `TokenizedCorpus` the instances point into.
      vocab: the `PretrainingVocab`.
      max_seq_length, max_predictions_per_seq: padded feature lengths.
      output_files: paths of the TFRecord files.
      num_logged_examples: how many instances to log in full (at absl
        verbosity 1, `--verbosity=1`).
      num_workers: processes that build and frame the records (forked, so
        they share the instances and the corpus with this process). Where
        fork is not available they are built here. The bytes do not depend
        on it.

    Returns:
      The number of records written.
    """
    encoder = pretraining_records.PretrainingExampleEncoder(
        max_seq_length, max_predictions_per_seq)
    batch_encoder = _BatchRecordEncoder(store, corpus, vocab, encoder)
    spans = [(start, min(start + _RECORDS_PER_BATCH, len(order)))
             for start in range(0, len(order), _RECORDS_PER_BATCH)]
    progress = progress_lib.Progress("create_pretraining_data: write",
                                     total=len(order), unit="record")
    with tfrecord_files.RoundRobinRecordWriter(output_files) as writer:
        with _FramedSpans(batch_encoder, order, len(output_files),
                          num_workers if len(spans) > 1 else 1) as framer:
            progress.start()
            for (start, stop), framed in zip(spans, framer.map(spans)):
                writer.write_framed_batch(framed, stop - start)
                progress.update(stop)
            progress.close()
        if logging.vlog_is_on(1):
            for index in order[:num_logged_examples]:
                _log_example(vocab,
                             instance_features(store, index, corpus, vocab),
                             max_seq_length, max_predictions_per_seq)
    total = writer.records_written
    logging.info("Wrote %d total instances", total)
    return total


def _check_output_files(output_files):
    """Fails before hours of work if an output file cannot be written."""
    if not output_files or any(not str(path) for path in output_files):
        raise PretrainingDataError(
            f"output files must be non-empty paths, got {list(output_files)}")
    for path in map(str, output_files):
        if "://" in path:
            continue  # Remote: checked by the writer.
        directory = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(directory):
            raise PretrainingDataError(
                f"cannot write output file {path}: directory {directory} "
                f"does not exist")


def create_pretraining_data(input_files, output_files, tokenizer,
                            max_seq_length=128, max_predictions_per_seq=20,
                            random_seed=12345, dupe_factor=10,
                            masked_lm_prob=0.15, short_seq_prob=0.1,
                            do_whole_word_mask=False, num_workers=1,
                            num_logged_examples=20, word_segmentation=None,
                            sentence_order=False):
    """Google's `create_pretraining_data.py`, from files to files.

    Args:
      input_files: text files, in reading order.
      output_files: TFRecord files, written round-robin.
      tokenizer: a `FullTokenizer`.
      max_seq_length .. do_whole_word_mask: Google's flags and defaults.
      num_workers: processes that tokenize the input and build the
        records; the output does not depend on it.
      num_logged_examples: instances logged in full at absl verbosity 1
        (`--verbosity=1`; Google: 20, at its default verbosity).
      word_segmentation: None (Google's), or with `do_whole_word_mask` one
        of `chinese_words.SEGMENTATIONS`: the characters of a Chinese word
        are masked together (`chinese_words`).
      sentence_order: ALBERT's sentence-order pairs instead of Google's
        next-sentence pairs (`create_training_instances`); the records'
        `next_sentence_labels` then hold 1 for a swapped pair.

    Returns:
      The number of records written.

    Raises:
      PretrainingDataError: bad input (empty corpus, vocabulary without
        [CLS]/[SEP]/[MASK], out-of-range flags); the message names it.
    """
    vocab = PretrainingVocab(
        tokenizer.vocab, getattr(tokenizer, "vocab_file", "the vocabulary"))
    validate_arguments(max_seq_length, dupe_factor, short_seq_prob,
                       masked_lm_prob, max_predictions_per_seq)
    if word_segmentation is not None and not do_whole_word_mask:
        raise PretrainingDataError(
            f"a Chinese word segmentation ({word_segmentation}) only "
            f"changes whole-word masking: it needs do_whole_word_mask")
    _check_output_files(output_files)
    corpus = pretraining_corpus.tokenize_corpus(
        input_files, tokenizer, num_workers=num_workers,
        word_segmentation=word_segmentation)
    rng = random.Random(random_seed)
    store, order = create_training_instances(
        corpus, vocab, rng, max_seq_length, dupe_factor, short_seq_prob,
        masked_lm_prob, max_predictions_per_seq, do_whole_word_mask,
        sentence_order)
    logging.info("*** Writing to output files ***")
    for output_file in output_files:
        logging.info("  %s", output_file)
    return write_instances_to_example_files(
        store, order, corpus, vocab, max_seq_length, max_predictions_per_seq,
        output_files, num_logged_examples, num_workers)
