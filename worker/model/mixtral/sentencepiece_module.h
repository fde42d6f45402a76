// Copyright 2026 SMoE Lab authors.
//
// File: worker/model/mixtral/sentencepiece_module.h
//
// The C ABI between smoe_mixtral and libsmoe_sentencepiece.so, a loadable
// module that wraps libsentencepiece.
//
// Why a module: Debian's libsentencepiece.so (0.1.97) carries its own copy
// of protobuf-lite 3.14 and exports those symbols. Linked into a process that
// also loads LibTorch's libprotobuf.so.32 (3.21), one copy's symbols
// interpose the other's and the process crashes in a static initializer or
// aborts on protobuf's version check. The module is opened with
// dlopen(RTLD_LOCAL | RTLD_DEEPBIND), so sentencepiece binds to its own
// protobuf and nothing else sees it. Its header also declares
// `namespace absl { using std::string_view; }`, which clashes with Abseil, so
// only sentencepiece_module.cc includes it.
//
// All strings crossing the ABI are (pointer, length); buffers returned by the
// module are released with `free_buffer`. Every function returning int
// returns 0 on success and otherwise sets *error to a module-allocated
// message.
#ifndef SMOE_WORKER_MODEL_MIXTRAL_SENTENCEPIECE_MODULE_H_
#define SMOE_WORKER_MODEL_MIXTRAL_SENTENCEPIECE_MODULE_H_

#include <stddef.h>

extern "C" {

#define SMOE_SP_MODULE_ABI_VERSION 1

struct SmoeSpApi {
  int abi_version;  // SMOE_SP_MODULE_ABI_VERSION
  // Loads a model file; *processor receives an opaque handle.
  int (*load)(const char* path, void** processor, char** error);
  void (*destroy)(void* processor);
  // Encodes text into ids (no BOS/EOS); *ids is a module buffer of *n ints.
  int (*encode)(void* processor, const char* text, size_t text_len, int** ids,
                size_t* n, char** error);
  // Decodes ids; *text is a module buffer of *text_len bytes.
  int (*decode)(void* processor, const int* ids, size_t n, char** text,
                size_t* text_len, char** error);
  int (*piece_size)(void* processor);
  int (*bos_id)(void* processor);
  int (*eos_id)(void* processor);
  int (*unk_id)(void* processor);
  // Writes piece `id` to a module buffer.
  int (*id_to_piece)(void* processor, int id, char** piece, size_t* len,
                     char** error);
  // Trains on n sentences with n_options key/value trainer flags; the
  // serialized model goes to a module buffer.
  int (*train)(const char* const* sentences, const size_t* sentence_lens,
               size_t n, const char* const* keys, const char* const* values,
               size_t n_options, char** model, size_t* model_len, char** error);
  void (*free_buffer)(void* buffer);
};

// The module's only exported symbol.
const SmoeSpApi* smoe_sp_module_api(void);
}

#endif  // SMOE_WORKER_MODEL_MIXTRAL_SENTENCEPIECE_MODULE_H_
