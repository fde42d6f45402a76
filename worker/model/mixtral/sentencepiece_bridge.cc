// Copyright 2026 SMoE Lab authors.
#include "worker/model/mixtral/sentencepiece_bridge.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>

#include "worker/model/mixtral/sentencepiece_module.h"

namespace smoe::model::mixtral {
namespace {

constexpr char kModuleName[] = "libsmoe_sentencepiece.so";

std::string SelfDir() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "";
  std::string path(buf, static_cast<size_t>(n));
  return path.substr(0, path.rfind('/'));
}

// Opens the module once per process (see sentencepiece_module.h for why
// RTLD_DEEPBIND); *error explains every place looked at when it fails.
const SmoeSpApi* Api(std::string* error) {
  static std::once_flag once;
  static const SmoeSpApi* api = nullptr;
  static std::string load_error;
  std::call_once(once, [] {
    std::vector<std::string> candidates;
    if (const char* env = std::getenv("SMOE_SENTENCEPIECE_MODULE")) {
      candidates.push_back(env);
    }
    candidates.push_back(SelfDir() + "/" + kModuleName);
#ifdef SMOE_SENTENCEPIECE_MODULE_PATH
    candidates.push_back(SMOE_SENTENCEPIECE_MODULE_PATH);
#endif
    for (const std::string& path : candidates) {
      void* handle =
          ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
      if (handle == nullptr) {
        load_error += std::string(" [") + ::dlerror() + "]";
        continue;
      }
      using Fn = const SmoeSpApi* (*)();
      auto fn = reinterpret_cast<Fn>(::dlsym(handle, "smoe_sp_module_api"));
      if (fn == nullptr || fn()->abi_version != SMOE_SP_MODULE_ABI_VERSION) {
        load_error +=
            " [" + path + ": not an ABI v1 smoe sentencepiece module]";
        continue;
      }
      api = fn();
      return;
    }
  });
  if (api == nullptr) {
    *error = std::string("cannot load ") + kModuleName +
             " (built with libsentencepiece-dev; set "
             "SMOE_SENTENCEPIECE_MODULE to its path):" +
             load_error;
  }
  return api;
}

std::string TakeError(const SmoeSpApi* api, char* error) {
  std::string out = error != nullptr ? error : "unknown error";
  if (error != nullptr) api->free_buffer(error);
  return out;
}

}  // namespace

struct SentencePieceBridge::Impl {
  const SmoeSpApi* api = nullptr;
  void* processor = nullptr;
};

SentencePieceBridge::SentencePieceBridge() : impl_(new Impl()) {}

SentencePieceBridge::~SentencePieceBridge() {
  if (impl_->processor != nullptr) impl_->api->destroy(impl_->processor);
}

std::unique_ptr<SentencePieceBridge> SentencePieceBridge::Load(
    const std::string& path, std::string* error) {
  const SmoeSpApi* api = Api(error);
  if (api == nullptr) return nullptr;
  std::unique_ptr<SentencePieceBridge> b(new SentencePieceBridge());
  b->impl_->api = api;
  char* err = nullptr;
  if (api->load(path.c_str(), &b->impl_->processor, &err) != 0) {
    *error = TakeError(api, err);
    return nullptr;
  }
  return b;
}

bool SentencePieceBridge::Encode(const std::string& text, std::vector<int>* ids,
                                 std::string* error) const {
  int* buf = nullptr;
  size_t n = 0;
  char* err = nullptr;
  if (impl_->api->encode(impl_->processor, text.data(), text.size(), &buf, &n,
                         &err) != 0) {
    *error = TakeError(impl_->api, err);
    return false;
  }
  ids->assign(buf, buf + n);
  impl_->api->free_buffer(buf);
  return true;
}

bool SentencePieceBridge::Decode(const std::vector<int>& ids, std::string* text,
                                 std::string* error) const {
  char* buf = nullptr;
  size_t n = 0;
  char* err = nullptr;
  if (impl_->api->decode(impl_->processor, ids.data(), ids.size(), &buf, &n,
                         &err) != 0) {
    *error = TakeError(impl_->api, err);
    return false;
  }
  text->assign(buf, n);
  impl_->api->free_buffer(buf);
  return true;
}

int SentencePieceBridge::PieceSize() const {
  return impl_->api->piece_size(impl_->processor);
}
int SentencePieceBridge::bos_id() const {
  return impl_->api->bos_id(impl_->processor);
}
int SentencePieceBridge::eos_id() const {
  return impl_->api->eos_id(impl_->processor);
}
int SentencePieceBridge::unk_id() const {
  return impl_->api->unk_id(impl_->processor);
}

std::string SentencePieceBridge::IdToPiece(int id) const {
  char* buf = nullptr;
  size_t n = 0;
  char* err = nullptr;
  if (impl_->api->id_to_piece(impl_->processor, id, &buf, &n, &err) != 0) {
    impl_->api->free_buffer(err);
    return "";
  }
  std::string out(buf, n);
  impl_->api->free_buffer(buf);
  return out;
}

bool TrainSentencePiece(const std::vector<std::string>& sentences,
                        const std::map<std::string, std::string>& options,
                        std::string* model, std::string* error) {
  const SmoeSpApi* api = Api(error);
  if (api == nullptr) return false;
  std::vector<const char*> text, keys, values;
  std::vector<size_t> lens;
  for (const std::string& s : sentences) {
    text.push_back(s.data());
    lens.push_back(s.size());
  }
  for (const auto& [k, v] : options) {
    keys.push_back(k.c_str());
    values.push_back(v.c_str());
  }
  char* buf = nullptr;
  size_t n = 0;
  char* err = nullptr;
  if (api->train(text.data(), lens.data(), text.size(), keys.data(),
                 values.data(), keys.size(), &buf, &n, &err) != 0) {
    *error = TakeError(api, err);
    return false;
  }
  model->assign(buf, n);
  api->free_buffer(buf);
  return true;
}

}  // namespace smoe::model::mixtral
