// Copyright 2026 SMoE Lab authors.
#include "proto/utf8_fields.h"

#include "absl/strings/str_cat.h"
#include "common/utf8.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/reflection.h"
#include "google/protobuf/unknown_field_set.h"

namespace smoe::proto {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;
using google::protobuf::UnknownField;
using google::protobuf::UnknownFieldSet;

constexpr int kMaxDepth = 64;

// Visits every string value; `fix` returns true when it changed the value.
// Returns the number of changes, or stops at the first bad value when
// `path` is non-null (then *path names it).
int Walk(Message* m, const Message& cm, std::string* path,
         const std::string& prefix, int depth) {
  if (depth > kMaxDepth) return 0;
  const Reflection* r = cm.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  r->ListFields(cm, &fields);
  int changed = 0;
  for (const FieldDescriptor* f : fields) {
    const std::string name = absl::StrCat(prefix, f->name());
    if (f->type() == FieldDescriptor::TYPE_STRING) {
      if (f->is_repeated()) {
        for (int i = 0; i < r->FieldSize(cm, f); ++i) {
          const std::string v = r->GetRepeatedString(cm, f, i);
          if (IsValidUtf8(v)) continue;
          if (path != nullptr) {
            *path = absl::StrCat(name, "[", i, "]");
            return 1;
          }
          r->SetRepeatedString(m, f, i, ToValidUtf8(v));
          ++changed;
        }
      } else {
        const std::string v = r->GetString(cm, f);
        if (IsValidUtf8(v)) continue;
        if (path != nullptr) {
          *path = name;
          return 1;
        }
        r->SetString(m, f, ToValidUtf8(v));
        ++changed;
      }
    } else if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      if (f->is_repeated()) {
        for (int i = 0; i < r->FieldSize(cm, f); ++i) {
          const std::string sub = absl::StrCat(name, "[", i, "].");
          if (path != nullptr) {
            if (Walk(nullptr, r->GetRepeatedMessage(cm, f, i), path, sub,
                     depth + 1) > 0) {
              return 1;
            }
            continue;
          }
          // Only touch (and so mutate) entries that need it: a map's
          // repeated view is rebuilt when it is mutated.
          std::string bad;
          if (Walk(nullptr, r->GetRepeatedMessage(cm, f, i), &bad, sub,
                   depth + 1) == 0) {
            continue;
          }
          Message* e = r->MutableRepeatedMessage(m, f, i);
          changed += Walk(e, *e, nullptr, sub, depth + 1);
        }
      } else {
        const std::string sub = absl::StrCat(name, ".");
        if (path != nullptr) {
          if (Walk(nullptr, r->GetMessage(cm, f), path, sub, depth + 1) > 0) {
            return 1;
          }
          continue;
        }
        std::string bad;
        if (Walk(nullptr, r->GetMessage(cm, f), &bad, sub, depth + 1) == 0) {
          continue;
        }
        Message* e = r->MutableMessage(m, f);
        changed += Walk(e, *e, nullptr, sub, depth + 1);
      }
    }
  }
  return changed;
}

// Replaces ill-formed UTF-8 in the string fields of the wire-form message
// `set` of type `d`. False when a nested message does not parse.
bool FixWire(const Descriptor* d, UnknownFieldSet* set, int depth) {
  if (depth > kMaxDepth) return false;
  for (int i = 0; i < set->field_count(); ++i) {
    UnknownField* u = set->mutable_field(i);
    if (u->type() != UnknownField::TYPE_LENGTH_DELIMITED) continue;
    const FieldDescriptor* f = d->FindFieldByNumber(u->number());
    if (f == nullptr) continue;
    if (f->type() == FieldDescriptor::TYPE_STRING) {
      *u->mutable_length_delimited() = ToValidUtf8(u->length_delimited());
    } else if (f->type() == FieldDescriptor::TYPE_MESSAGE) {
      UnknownFieldSet sub;
      if (!sub.ParseFromString(u->length_delimited()) ||
          !FixWire(f->message_type(), &sub, depth + 1)) {
        return false;
      }
      std::string bytes;
      if (!sub.SerializeToString(&bytes)) return false;
      *u->mutable_length_delimited() = std::move(bytes);
    }
  }
  return true;
}

}  // namespace

int MakeStringFieldsValidUtf8(Message* m) {
  return Walk(m, *m, nullptr, "", 0);
}

std::string FirstInvalidUtf8Field(const Message& m) {
  std::string path;
  Walk(nullptr, m, &path, "", 0);
  return path;
}

bool ParseReplacingInvalidUtf8(const std::string& bytes, Message* out) {
  if (out->ParseFromString(bytes)) return true;
  UnknownFieldSet set;
  if (!set.ParseFromString(bytes) || !FixWire(out->GetDescriptor(), &set, 0)) {
    return false;
  }
  std::string fixed;
  if (!set.SerializeToString(&fixed)) return false;
  return out->ParseFromString(fixed);
}

}  // namespace smoe::proto
