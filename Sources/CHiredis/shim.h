#ifndef TOOT_RELAY_CHIREDIS_SHIM_H
#define TOOT_RELAY_CHIREDIS_SHIM_H
// hiredis 0.14.1 (Debian 12), imported by the module Redis only
// (ARCHITECTURE.md §3), all of it in Sources/Redis/Hiredis.swift: the
// RESP reader (redisReader, with reply functions of the relay's own that
// apply RedisReplyLimits) and the command formatter (redisFormatCommandArgv).
// No macro is needed: the reader's fields are plain struct members.
#include <hiredis/hiredis.h>
#include <hiredis/read.h>
#endif
