// The SentencePiece wrapper (tokenizer_spm.h), one of the two C++ files
// (CMakeLists.txt says why).
// SentencePiece reports failures as util::Status and may throw
// std::bad_alloc; both become a clformer_status here, so no exception or
// C++ type crosses into the C code.
extern "C" {
#include "fileio.h"
#include "spm_charsmap.h"
#include "status.h"
#include "tokenizer_spm.h"
#include "vocab.h"
}

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <unordered_map>
#include <vector>

struct cf_spm {
    sentencepiece::SentencePieceProcessor proc;
    std::string bytes;
    std::vector<int> to_spm;    // clformer id -> SentencePiece id (-1: none, the specials)
    std::vector<int32_t> to_cf; // SentencePiece id -> clformer id
};

namespace {

// Feeds the sentences to the trainer without writing them to a file.
class Sentences : public sentencepiece::SentenceIterator {
  public:
    Sentences(const char *const *s, size_t n) : s_(s), n_(n) { load(); }
    bool done() const override { return i_ >= n_; }
    void Next() override {
        i_++;
        load();
    }
    const std::string &value() const override { return value_; }
    sentencepiece::util::Status status() const override { return {}; }

  private:
    void load() {
        if (i_ < n_) value_.assign(s_[i_]);
    }
    const char *const *s_;
    size_t n_, i_ = 0;
    std::string value_;
};

clformer_status out_of_memory(const char *what)
{
    return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory %s", what);
}

// The id map of a loaded model: the model's pad/bos/eos/unk to 0..3, its
// other pieces to 4.. in order.
void map_ids(cf_spm *spm)
{
    const auto &p = spm->proc;
    const int special[CF_N_SPECIALS] = {p.pad_id(), p.bos_id(), p.eos_id(), p.unk_id()};
    const int n = p.GetPieceSize();
    spm->to_cf.assign((size_t)n, -1);
    spm->to_spm.assign(CF_N_SPECIALS, -1);
    for (int k = 0; k < CF_N_SPECIALS; k++)
        if (special[k] >= 0 && special[k] < n) spm->to_cf[(size_t)special[k]] = k;
    for (int i = 0; i < n; i++) {
        if (spm->to_cf[(size_t)i] >= 0) continue;
        spm->to_cf[(size_t)i] = (int32_t)spm->to_spm.size();
        spm->to_spm.push_back(i);
    }
}

// The first piece whose text an earlier piece already has, or -1. SentencePiece
// keeps control and unknown pieces apart from the others, so it loads a model
// where one of each shares a text, then fails encoding the text they share.
int repeated_piece(const sentencepiece::SentencePieceProcessor &p, int *first)
{
    std::unordered_map<std::string, int> seen;
    for (int i = 0; i < p.GetPieceSize(); i++) {
        const auto ins = seen.emplace(p.IdToPiece(i), i);
        if (!ins.second) {
            *first = ins.first->second;
            return i;
        }
    }
    return -1;
}

} // namespace

extern "C" clformer_status cf_spm_train(const char *const *sentences, size_t n,
                                        const cf_spm_train_options *o, char **model,
                                        size_t *size)
{
    *model = NULL;
    *size = 0;
    const std::string type = o->model_type ? o->model_type : "";
    if (type != "unigram" && type != "bpe")
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "tokenizer type '%s': use unigram or bpe",
                       type.c_str());
    if (o->vocab_size < 8)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "a SentencePiece vocabulary of %d pieces "
                       "is too small: use a --vocab-size of at least 8", o->vocab_size);
    if (n == 0)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "no sentences to learn a SentencePiece "
                       "vocabulary from");
    try {
        const std::unordered_map<std::string, std::string> args = {
            {"model_type", type},
            {"vocab_size", std::to_string(o->vocab_size)},
            {"character_coverage", "1.0"},
            {"input_sentence_size", std::to_string(o->max_sentences)},
            {"shuffle_input_sentence", "true"},
            {"num_threads", std::to_string(o->threads > 0 ? o->threads : 1)},
            {"pad_id", "0"}, {"bos_id", "1"}, {"eos_id", "2"}, {"unk_id", "3"},
            {"pad_piece", cf_special_tokens[CF_PAD]}, {"bos_piece", cf_special_tokens[CF_SOS]},
            {"eos_piece", cf_special_tokens[CF_EOS]}, {"unk_piece", cf_special_tokens[CF_UNK]},
            {"minloglevel", "2"}, // its progress log would drown the trainer's
        };
        sentencepiece::SetRandomGeneratorSeed(o->seed);
        Sentences it(sentences, n);
        std::string bytes;
        const auto st = sentencepiece::SentencePieceTrainer::Train(args, &it, &bytes);
        if (!st.ok()) {
            const char *msg = st.error_message();
            const char *fix = strstr(msg, "smaller than required") ? " (use a larger --vocab-size)"
                              : strstr(msg, "ocabulary size") ? " (use a smaller --vocab-size)"
                                                              : "";
            return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "learning a SentencePiece vocabulary "
                           "of %d pieces: %s%s", o->vocab_size, msg, fix);
        }
        char *copy = (char *)malloc(bytes.size());
        if (!copy) return out_of_memory("keeping the SentencePiece model");
        memcpy(copy, bytes.data(), bytes.size());
        *model = copy;
        *size = bytes.size();
        return CLFORMER_OK;
    } catch (const std::bad_alloc &) {
        return out_of_memory("learning a SentencePiece vocabulary");
    }
}

extern "C" clformer_status cf_spm_load(const void *model, size_t size, const char *origin,
                                       cf_spm **out)
{
    *out = NULL;
    CF_TRY(cf_spm_check_charsmaps(model, size, origin));
    cf_spm *spm = NULL;
    try {
        spm = new cf_spm;
        spm->bytes.assign((const char *)model, size);
        const auto st = spm->proc.LoadFromSerializedProto(spm->bytes);
        if (!st.ok() || spm->proc.GetPieceSize() <= 0) {
            delete spm;
            return cf_fail(CLFORMER_ERR_FORMAT, "%s is not a SentencePiece model (%s): give a "
                           "FILE.model written by spm_train or by clformer train --tokenizer spm",
                           origin, st.ok() ? "no pieces" : st.error_message());
        }
        const int unk = spm->proc.unk_id();
        if (unk < 0 || unk >= spm->proc.GetPieceSize()) {
            delete spm;
            return cf_fail(CLFORMER_ERR_FORMAT, "%s: the SentencePiece model has no unknown "
                           "piece; train it with an unk_id", origin);
        }
        int first = -1;
        const int again = repeated_piece(spm->proc, &first);
        if (again >= 0) {
            const clformer_status refused = cf_fail(
                CLFORMER_ERR_FORMAT, "%s: pieces %d and %d are both \"%s\", and SentencePiece "
                "cannot encode a text with a piece named twice: give a FILE.model written by "
                "spm_train or by clformer train --tokenizer spm", origin, first, again,
                spm->proc.IdToPiece(again).c_str());
            delete spm;
            return refused;
        }
        map_ids(spm);
        *out = spm;
        return CLFORMER_OK;
    } catch (const std::bad_alloc &) {
        delete spm;
        return out_of_memory("loading a SentencePiece model");
    } catch (const std::exception &e) { // e.g. darts-clone refusing an empty piece
        delete spm;
        return cf_fail(CLFORMER_ERR_FORMAT, "%s is not a usable SentencePiece model (%s): give a "
                       "FILE.model written by spm_train or by clformer train --tokenizer spm",
                       origin, e.what());
    }
}

extern "C" clformer_status cf_spm_load_file(const char *path, cf_spm **out)
{
    *out = NULL;
    char *data = NULL;
    size_t size = 0;
    CF_TRY(cf_read_file(path, &data, &size));
    clformer_status st = cf_spm_load(data, size, path, out);
    free(data);
    return st;
}

extern "C" clformer_status cf_spm_check_vocab(const cf_spm *spm, const char *const *vocab, int n,
                                              const char *origin, const char *side)
{
    if (cf_spm_size(spm) != n)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "%s has %d pieces but the %s vocabulary %d "
                       "tokens: the vocabulary must be the model's pieces", origin,
                       (int)cf_spm_size(spm), side, n);
    for (int i = 0; i < n; i++)
        if (strcmp(cf_spm_piece(spm, i), vocab[i]))
            return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "%s: piece %d is '%s' but the %s "
                           "vocabulary's token %d is '%s'", origin, i, cf_spm_piece(spm, i), side,
                           i, vocab[i]);
    return CLFORMER_OK;
}

extern "C" void cf_spm_free(cf_spm *spm) { delete spm; }

extern "C" int32_t cf_spm_size(const cf_spm *spm) { return (int32_t)spm->to_spm.size(); }

extern "C" const char *cf_spm_piece(const cf_spm *spm, int32_t id)
{
    if (id < 0 || (size_t)id >= spm->to_spm.size()) return NULL;
    if (id < CF_N_SPECIALS) return cf_special_tokens[id];
    return spm->proc.IdToPiece(spm->to_spm[(size_t)id]).c_str();
}

extern "C" const void *cf_spm_bytes(const cf_spm *spm, size_t *size)
{
    *size = spm->bytes.size();
    return spm->bytes.data();
}

extern "C" clformer_status cf_spm_encode(const cf_spm *spm, const char *s, size_t len,
                                         bool specials, int32_t *ids, size_t cap, size_t *count,
                                         size_t *n_unk)
{
    *count = 0;
    if (n_unk) *n_unk = 0;
    try {
        std::vector<int> pieces;
        const auto st = spm->proc.Encode(std::string(s, len), &pieces);
        if (!st.ok())
            return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "SentencePiece could not encode a "
                           "sentence: %s", st.error_message());
        size_t k = 0;
        auto put = [&](int32_t id) {
            if (k < cap) ids[k] = id;
            k++;
        };
        if (specials) put(CF_SOS);
        for (int p : pieces) {
            const int32_t id = spm->to_cf[(size_t)p];
            if (id == CF_UNK && n_unk) (*n_unk)++;
            put(id);
        }
        if (specials) put(CF_EOS);
        *count = k;
        return CLFORMER_OK;
    } catch (const std::bad_alloc &) {
        return out_of_memory("encoding a sentence");    } catch (const std::exception &e) {
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "SentencePiece failed encoding a sentence: %s", e.what());
    }
}

// SentencePiece's decoding of its own ids into *out (malloc'd; *len its
// bytes when len is set).
static clformer_status decode_pieces(const cf_spm *spm, const std::vector<int> &pieces,
                                     char **out, size_t *len)
{
    std::string text;
    const auto st = spm->proc.Decode(pieces, &text);
    if (!st.ok())
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "SentencePiece could not decode: %s",
                       st.error_message());
    char *copy = (char *)malloc(text.size() + 1);
    if (!copy) return out_of_memory("decoding");
    memcpy(copy, text.c_str(), text.size() + 1);
    *out = copy;
    if (len) *len = text.size();
    return CLFORMER_OK;
}

extern "C" clformer_status cf_spm_decode(const cf_spm *spm, const int32_t *ids, size_t n,
                                         char **out)
{
    *out = NULL;
    try {
        std::vector<int> pieces;
        for (size_t i = 0; i < n; i++) {
            const int32_t id = ids[i];
            if (id < 0 || (size_t)id >= spm->to_spm.size())
                return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "token id %d at position %zu is "
                               "outside the vocabulary (size %zu)", (int)id, i,
                               spm->to_spm.size());
            if (id == CF_EOS) break;
            if (id == CF_PAD || id == CF_SOS) continue;
            pieces.push_back(id == CF_UNK ? spm->proc.unk_id() : spm->to_spm[(size_t)id]);
        }
        return decode_pieces(spm, pieces, out, NULL);
    } catch (const std::bad_alloc &) {
        return out_of_memory("decoding a sentence");    } catch (const std::exception &e) {
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "SentencePiece failed decoding a sentence: %s", e.what());
    }
}

extern "C" clformer_status cf_spm_pieces_line(const cf_spm *spm, const char *s, size_t len,
                                              char **out)
{
    *out = NULL;
    size_t n = 0;
    CF_TRY(cf_spm_encode(spm, s, len, false, NULL, 0, &n, NULL));
    try {
        std::vector<int32_t> ids(n ? n : 1);
        CF_TRY(cf_spm_encode(spm, s, len, false, ids.data(), n, &n, NULL));
        std::string line;
        for (size_t i = 0; i < n; i++) {
            if (i) line += ' ';
            line += cf_spm_piece(spm, ids[i]);
        }
        char *copy = (char *)malloc(line.size() + 1);
        if (!copy) return out_of_memory("tokenising a sentence");
        memcpy(copy, line.c_str(), line.size() + 1);
        *out = copy;
        return CLFORMER_OK;
    } catch (const std::bad_alloc &) {
        return out_of_memory("tokenising a sentence");    } catch (const std::exception &e) {
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "SentencePiece failed tokenising a sentence: %s", e.what());
    }
}

extern "C" clformer_status clformer_spm_train(const char *const *sentences, size_t n,
                                              int vocab_size, const char *model_type,
                                              void **model, size_t *size)
{
    const cf_spm_train_options o = {vocab_size, model_type, 2000000, 1, 1};
    char *bytes = NULL;
    clformer_status st = cf_spm_train(sentences, n, &o, &bytes, size);
    *model = bytes;
    return st;
}

// ---- the model's own ids (tokenizer_spm.h, "Native ids") ----

extern "C" int32_t cf_spm_native_size(const cf_spm *spm)
{
    return (int32_t)spm->proc.GetPieceSize();
}

extern "C" const char *cf_spm_native_piece(const cf_spm *spm, int32_t id)
{
    if (id < 0 || id >= spm->proc.GetPieceSize()) return NULL;
    return spm->proc.IdToPiece(id).c_str();
}

extern "C" void cf_spm_native_specials(const cf_spm *spm, int32_t *unk, int32_t *bos,
                                       int32_t *eos, int32_t *pad)
{
    *unk = spm->proc.unk_id();
    *bos = spm->proc.bos_id();
    *eos = spm->proc.eos_id();
    *pad = spm->proc.pad_id();
}

extern "C" clformer_status cf_spm_native_encode(const cf_spm *spm, const char *s, size_t len,
                                                int32_t **ids, size_t *n)
{
    *ids = NULL;
    *n = 0;
    try {
        std::vector<int> pieces;
        const auto st = spm->proc.Encode(std::string(s, len), &pieces);
        if (!st.ok())
            return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "SentencePiece could not encode a "
                           "text: %s", st.error_message());
        int32_t *out = (int32_t *)malloc((pieces.size() ? pieces.size() : 1) * sizeof *out);
        if (!out) return out_of_memory("encoding a text");
        for (size_t i = 0; i < pieces.size(); i++) out[i] = pieces[i];
        *ids = out;
        *n = pieces.size();
        return CLFORMER_OK;
    } catch (const std::bad_alloc &) {
        return out_of_memory("encoding a text");
    } catch (const std::exception &e) {
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "SentencePiece failed encoding a text: %s",
                       e.what());
    }
}

extern "C" clformer_status cf_spm_native_decode(const cf_spm *spm, const int32_t *ids, size_t n,
                                                char **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    try {
        std::vector<int> pieces;
        for (size_t i = 0; i < n; i++) {
            if (ids[i] < 0 || ids[i] >= spm->proc.GetPieceSize())
                return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "token id %d at position %zu is "
                               "outside the vocabulary (size %d)", (int)ids[i], i,
                               spm->proc.GetPieceSize());
            pieces.push_back(ids[i]);
        }
        return decode_pieces(spm, pieces, out, len);
    } catch (const std::bad_alloc &) {
        return out_of_memory("decoding a text");
    } catch (const std::exception &e) {
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "SentencePiece failed decoding: %s",
                       e.what());
    }
}
