#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (tests/fuzz/corpus/<target>/).

Usage: tests/fuzz/make_seeds.py CHECKPOINT... [FILE.model...]   (clformer
training checkpoints, e.g. the micro ones of tests/fuzz/README.md, and
SentencePiece models). The checkpoints become seeds of fuzz_checkpoint and
fuzz_safetensors (also a copy without checksums); their metadata values seed
fuzz_config, fuzz_train_state and fuzz_vocab. The SentencePiece models (and
tests/data/spm/default_ids.model) seed fuzz_tokenizer, as bytes and as
base64 metadata values. The corpus, program cache and checksum seeds are
written from scratch. Crash
regression files are added by hand and never regenerated.
"""
import base64
import json
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def put(target, name, data):
    path = os.path.join(HERE, "corpus", target, name)
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def header(blob):
    n = struct.unpack("<Q", blob[:8])[0]
    return json.loads(blob[8:8 + n])


def fnv1a(data):
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def checksum_seeds():
    """fuzz_checksums: byte 0 = tensor count | 0x80 for reversed data, the
    tensors' 4 bytes each, then the clformer.crc32c value."""
    tensors = [struct.pack("<f", v) for v in (1.0, -2.5, 0.0, 3e38)]
    for n in range(5):
        for reversed_ in (False, True):
            flag = n | (0x80 if reversed_ else 0)
            text = " ".join("%08x" % crc32c(t) for t in tensors[:n])
            put("fuzz_checksums", f"good{n}{'r' if reversed_ else ''}",
                bytes([flag]) + b"".join(tensors[:n]) + text.encode())
    good = " ".join("%08x" % crc32c(t) for t in tensors[:3])
    for name, text in [("wrong", good[:-1] + ("0" if good[-1] != "0" else "1")),
                       ("upper", good.upper()), ("short", good[:-1]),
                       ("tab", good.replace(" ", "\t")), ("trailing_space", good + " ")]:
        put("fuzz_checksums", name, bytes([3]) + b"".join(tensors[:3]) + text.encode())


def tokenizer_seeds(models):
    """fuzz_tokenizer: byte 0 even = the model's bytes follow, odd = its base64."""
    models = [os.path.join(HERE, "..", "data", "spm", "default_ids.model")] + models
    for path in models:
        name = os.path.splitext(os.path.basename(path))[0]
        blob = open(path, "rb").read()
        put("fuzz_tokenizer", f"{name}.model", b"\x00" + blob)
        put("fuzz_tokenizer", f"{name}.b64", b"\x01" + base64.b64encode(blob))


def metadata_checksum_seeds(checkpoints):
    """fuzz_checkpoint and fuzz_safetensors: checkpoints that carry the metadata
    checksum (clformer.meta_crc32c), each with same-length edits of its
    metadata (every one refused on open) and one edit with the checksum key
    renamed (loads unchecked, as files written before the checksum)."""
    key = b'"clformer.meta_crc32c"'
    for i, path in enumerate(checkpoints):
        blob = open(path, "rb").read()
        if key not in blob:
            continue
        meta = header(blob)["__metadata__"]
        name = f"meta{i}"
        put("fuzz_checkpoint", f"{name}.safetensors", blob)
        put("fuzz_safetensors", f"{name}.safetensors", blob)
        edits = []
        vocab = json.loads(meta["clformer.src_vocab"])
        if len(vocab) > 5:  # two words swapped (the JSON keeps its length)
            a, b = (json.dumps(vocab[k], ensure_ascii=False)[1:-1].encode() for k in (4, 5))
            old = b'\\"' + a + b'\\",\\"' + b + b'\\"'
            edits.append(("vocab_swapped", old, b'\\"' + b + b'\\",\\"' + a + b'\\"'))
        step = json.loads(meta["clformer.train_state"]).get("step")
        if step is not None and step < 9:
            edits.append(("step_edited", b'step\\":%d' % step, b'step\\":%d' % (step + 1)))
        edits.append(("config_edited", b'max_len\\":', b'max_lem\\":'))
        if "clformer.src_spm" in meta:  # one base64 character of the embedded model
            spm = meta["clformer.src_spm"].encode()
            mid = spm[len(spm) // 2:len(spm) // 2 + 8]
            flipped = bytes([mid[0] ^ 1 if chr(mid[0] ^ 1).isalnum() else mid[0] ^ 2]) + mid[1:]
            edits.append(("spm_flipped", mid, flipped))
        for what, old, new in edits:
            assert old in blob and len(old) == len(new), what
            edited = blob.replace(old, new, 1)
            put("fuzz_checkpoint", f"{name}_{what}.safetensors", edited)
            put("fuzz_safetensors", f"{name}_{what}.safetensors", edited)
            if what == "step_edited":
                put("fuzz_checkpoint", f"{name}_{what}_unchecked.safetensors",
                    edited.replace(key, b'"clformer.meta_crc32x"', 1))


def main():
    checkpoints = [a for a in sys.argv[1:] if not a.endswith(".model")]
    tokenizer_seeds([a for a in sys.argv[1:] if a.endswith(".model")])
    checksum_seeds()
    metadata_checksum_seeds(checkpoints)
    for i, path in enumerate(checkpoints):
        blob = open(path, "rb").read()
        put("fuzz_checkpoint", f"checkpoint{i}.safetensors", blob)
        put("fuzz_safetensors", f"checkpoint{i}.safetensors", blob)
        # the same key length, so the header stays valid: a file without checksums
        put("fuzz_checkpoint", f"checkpoint{i}_nocrc.safetensors",
            blob.replace(b'"clformer.crc32c"', b'"clformer.crc32x"', 1))
        meta = header(blob)["__metadata__"]
        put("fuzz_config", f"config{i}.json", meta["clformer.config"])
        put("fuzz_train_state", f"train_state{i}.json", meta["clformer.train_state"])
        put("fuzz_vocab", f"src_vocab{i}.json", meta["clformer.src_vocab"])
        put("fuzz_vocab", f"tgt_vocab{i}.json", meta["clformer.tgt_vocab"])
    put("fuzz_train_state", "trainer.json",
        '{"step":7,"seed":"18446744073709551615","optimizer":{"name":"adamw","beta1":0.9,'
        '"beta2":0.98,"eps":1e-9,"weight_decay":0.01,"clip":1.0},'
        '"trainer":{"epoch":2,"index":5,"order":[1,0,2]}}')
    put("fuzz_vocab", "specials_only.json", '["<pad>","<unk>","<sos>","<eos>"]')
    put("fuzz_vocab", "unicode.json", '["<pad>","<unk>","<sos>","<eos>","\\u00e9t\\u00e9","\\ud834\\udd1e","a"]')
    # corpus: first byte = where the input splits into source | target
    for name, src, tgt in [("plain", "a b c\nd e\n", "x y\nz\n"),
                           ("crlf_empty", "a b\r\n\r\nc\r\n", "x\r\n\r\ny z\r\n"),
                           ("utf8", "caf\u00e9 na\u00efve\n\u00fcber\n", "\u65e5\u672c \u8a9e\nx\n"),
                           ("long", "a " * 20 + "\nb\n", "c\n" + "d " * 20 + "\n")]:
        s, t = src.encode(), tgt.encode()
        total = len(s) + len(t)
        split_byte = round(len(s) * 255 / total)
        put("fuzz_corpus", name, bytes([split_byte]) + s + t)
    # program cache: the key fuzz_program_cache.c uses
    key = b"platform=fuzz\nsource=kernel void k() {}"
    for name, binary in [("small.bin", b"\x7fELF binary"), ("one.bin", b"\x00")]:
        put("fuzz_program_cache", name,
            b"CLFORMER-BIN-1\n" + struct.pack("<Q", len(key)) + key + struct.pack("<Q", len(binary))
            + binary + struct.pack("<Q", fnv1a(binary)))


if __name__ == "__main__":
    main()
