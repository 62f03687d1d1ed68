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
 * Where to start: ggufmap_model_open (model.h), ggufmap_preset (plan.h: the
 * command line's defaults for a device), ggufmap_place, ggufmap_plan_build,
 * then ggufmap_report_plan (report.h), ggufmap_fit_build (fit.h),
 * ggufmap_map (load.h) or ggufmap_repack (repack.h).
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
