/*
 * ggufmap/ggufmap.h - the whole public API.
 *
 * ggufmap keeps the memory a GGUF model maps equal to the memory it needs.
 * The data flows one way:
 *
 *   source (one GGUF file)  ->  model (all shards)  ->  placement  ->  plan
 *                                                   ->  report / fit / load / repack
 *
 * and a writer that produces GGUF files llama.cpp reads, and hash (SHA-256
 * of tensor data, an order-free model digest, model comparison).  Below the
 * source, remote reads the headers of models on HTTP(S) servers and Hugging
 * Face.
 *
 * Conventions, the same in every header:
 *   - An object of type ggufmap_X is made by ggufmap_X_open (it reads a file
 *     or the network), ggufmap_X_new (empty) or ggufmap_X_build (computed
 *     from another object), each returning a status and the object in *out,
 *     and released by ggufmap_X_free, which accepts NULL.  An operation's
 *     result (ggufmap_repack's) is released by its ggufmap_X_result_free.
 *   - Every call that can fail returns a ggufmap_status (GGUFMAP_OK is 0)
 *     and, where it takes one, fills a ggufmap_error naming the file,
 *     offset, key or tensor; questions return bool; counts and sizes are
 *     returned as they are.
 *   - Keys are found as pairs (ggufmap_source_find_kv, ggufmap_model_find_kv:
 *     a pointer, or NULL), tensors as indices (ggufmap_*_find_tensor: -1 when
 *     absent), because plans and placements refer to tensors by index.
 *
 * Where to start: ggufmap_model_open (model.h), ggufmap_preset (plan.h: the
 * command line's defaults for a device), ggufmap_placement_build, ggufmap_plan_build,
 * then ggufmap_report_plan (report.h), ggufmap_fit_build (fit.h),
 * ggufmap_mapped_open (load.h) or ggufmap_repack (repack.h).
 */
#ifndef GGUFMAP_GGUFMAP_H
#define GGUFMAP_GGUFMAP_H

#include "ggufmap/error.h"
#include "ggufmap/types.h"
#include "ggufmap/remote.h"
#include "ggufmap/source.h"
#include "ggufmap/model.h"
#include "ggufmap/writer.h"
#include "ggufmap/placement.h"
#include "ggufmap/plan.h"
#include "ggufmap/report.h"
#include "ggufmap/load.h"
#include "ggufmap/fit.h"
#include "ggufmap/hash.h"
#include "ggufmap/repack.h"

#define GGUFMAP_VERSION_STRING "0.1.0"

#endif
