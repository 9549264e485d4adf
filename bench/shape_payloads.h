// Payload shapes for the codec sweep (bench/codec_bench.cc): RankResults
// built by their own seeded generators, independent of the shipped model and
// the workload generator, so a codec is measured on shapes it was not tuned
// on.
//
//   strings   500 items; 12 double features, 20 double metrics, 10 short
//             categorical strings, 6 long distinct trace strings (150-300 B,
//             text with the repeated vocabulary of debug output); no logs.
//   longstrings 500 items; 12 double features and 6 long distinct trace
//             strings (150-300 B) each: the strings are most of the bytes.
//   fewkeys   500 items; 4 metrics (2 doubles, an int, a categorical string).
//   manykeys  500 items; 200 keys (doubles, floats, ints, short strings),
//             each item carries a different random half of them.
//   items_N   N items of a mixed shape (24 doubles, 8 floats, 4 ints, 3
//             short strings, a ~450 B log line of two traces), for N in 10..5000.
//
// Thread safety: plain functions over values.
#ifndef RANKWIRE_BENCH_SHAPE_PAYLOADS_H_
#define RANKWIRE_BENCH_SHAPE_PAYLOADS_H_

#include <cstddef>
#include <cstdint>

#include "codec/rank_result.h"

namespace rankwire::bench {

RankResult StringHeavyResult(size_t items, uint64_t seed);
RankResult LongStringsResult(size_t items, uint64_t seed);
RankResult FewKeysResult(size_t items, uint64_t seed);
RankResult ManyKeysResult(size_t items, uint64_t seed);
RankResult MixedResult(size_t items, uint64_t seed);

// Probe shapes (codec_bench --probe): distinct short strings; 20-80 B
// strings from 300 values; 1-60 of 60 keys per item in random order; 8 of
// 3000 keys per item; 80 B ids with 1.6 KB logs; items with no metrics; a
// ranker's explained result (38 keys in every item, 5 explanation
// features and contributions in the top 10 items only).
RankResult DistinctShortResult(size_t items, uint64_t seed);
RankResult MediumRepeatResult(size_t items, uint64_t seed);
RankResult RaggedResult(size_t items, uint64_t seed);
RankResult WideSparseResult(size_t items, uint64_t seed);
RankResult LongIdResult(size_t items, uint64_t seed);
RankResult BareResult(size_t items, uint64_t seed);
RankResult ExplainedResult(size_t items, uint64_t seed);

}  // namespace rankwire::bench

#endif  // RANKWIRE_BENCH_SHAPE_PAYLOADS_H_
