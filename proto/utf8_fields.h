// Copyright 2026 SMoE Lab authors.
//
// File: proto/utf8_fields.h
//
// proto3 `string` fields must hold well-formed UTF-8: the C++ serializer
// only logs an error for one that does not, but the receiver refuses the
// whole message (gRPC answers INTERNAL, "Failed to parse request", and no
// retry can succeed). Issue 36 item 1: one Latin-1 byte in a trainer's
// output, in a log tail, wedged the worker that reported it. Every request a
// worker or the CLI sends goes through MakeStringFieldsValidUtf8 (bad bytes
// become U+FFFD), and journal entries written by an older daemon that let
// such bytes through are read with ParseReplacingInvalidUtf8.
#ifndef SMOE_PROTO_UTF8_FIELDS_H_
#define SMOE_PROTO_UTF8_FIELDS_H_

#include <string>

#include "google/protobuf/message.h"

namespace smoe::proto {

// Replaces ill-formed UTF-8 in every `string` field of `m` (singular,
// repeated, map keys and values, nested messages; not `bytes`) with U+FFFD.
// Returns how many field values were changed.
int MakeStringFieldsValidUtf8(google::protobuf::Message* m);

// The path of the first `string` field of `m` that is not well-formed UTF-8
// ("log.text", "args[2]"), or "" when every one is.
std::string FirstInvalidUtf8Field(const google::protobuf::Message& m);

// Parses `bytes` (the wire form of `out`'s type) like ParseFromString, except
// that ill-formed UTF-8 in `string` fields is replaced instead of failing
// the parse. False when `bytes` is not a message of that type.
bool ParseReplacingInvalidUtf8(const std::string& bytes,
                               google::protobuf::Message* out);

}  // namespace smoe::proto

#endif  // SMOE_PROTO_UTF8_FIELDS_H_
