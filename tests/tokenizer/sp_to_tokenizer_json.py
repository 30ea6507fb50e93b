"""Converts a SentencePiece BPE model into the tokenizer.json that Llama 2 / TinyLlama ship.

The layout is Hugging Face's Llama converter's: the vocabulary is the model's pieces by id, the
merges are every split of a piece into two pieces that are both in the vocabulary, ordered by the
merged piece's score (best first; a stable sort, so equal scores keep piece order and, within one
piece, the order of the halves' ids), normalizer Prepend("▁") + Replace(" " -> "▁"), no
pre-tokenizer, BPE with byte fallback, a decoder that undoes all of it, and BOS from a template.
"""
import sentencepiece as spm

SPACE = "\u2581"


def merges_from_pieces(pieces, scores):
    ids = {p: i for i, p in enumerate(pieces)}
    ranked = []
    for piece, score in zip(pieces, scores):
        halves = [(piece[:k], piece[k:]) for k in range(1, len(piece))]
        halves = [h for h in halves if h[0] in ids and h[1] in ids]
        halves.sort(key=lambda h: (ids[h[0]], ids[h[1]]))
        ranked.extend((score, h) for h in halves)
    ranked.sort(key=lambda item: -item[0])
    return [list(h) for _, h in ranked]


def added(token_id, content):
    return {"id": token_id, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
            "normalized": False, "special": True}


def convert(model_path):
    sp = spm.SentencePieceProcessor(model_file=model_path)
    n = sp.get_piece_size()
    pieces = [sp.id_to_piece(i) for i in range(n)]
    scores = [sp.get_score(i) for i in range(n)]
    unk, bos, eos = sp.unk_id(), sp.bos_id(), sp.eos_id()
    template = [{"SpecialToken": {"id": pieces[bos], "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [added(unk, pieces[unk]), added(bos, pieces[bos]), added(eos, pieces[eos])],
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": SPACE},
            {"type": "Replace", "pattern": {"String": " "}, "content": SPACE}]},
        "pre_tokenizer": None,
        "post_processor": {
            "type": "TemplateProcessing",
            "single": template,
            "pair": template + [{"SpecialToken": {"id": pieces[bos], "type_id": 1}},
                                {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {pieces[bos]: {"id": pieces[bos], "ids": [bos], "tokens": [pieces[bos]]}}},
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": SPACE}, "content": " "},
            {"type": "ByteFallback"},
            {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "model": {
            "type": "BPE", "dropout": None, "unk_token": pieces[unk], "continuing_subword_prefix": None,
            "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
            "vocab": {p: i for i, p in enumerate(pieces)},
            "merges": merges_from_pieces(pieces, scores)},
    }
