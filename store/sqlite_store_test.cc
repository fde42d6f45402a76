// Copyright 2026 SMoE Lab authors.
//
// File: store/sqlite_store_test.cc
//
// SqliteStore behaviour beyond the shared contract.
#include "store/sqlite_store.h"
