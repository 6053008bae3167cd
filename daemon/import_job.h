// RunImportJob: the work of an import job (POST
// /v1/containers/{c}/import?job=true, docs/api.md "Bulk import"): feeds the
// body the request spooled (daemon/import_spool.h) into an ImportRun, piece
// by piece, and reports its progress to the job: lines and bytes done, of
// the spool's totals.
//
// A stop requested on the job (a cancel, or the daemon shutting down) is
// seen between pieces: nothing more is read, the lines already gathered are
// committed (ImportRun::Finish), and the report says what was written, with
// `stop_error` as its error. The spool file is removed when the run ends.
//
// Thread-safety: blocks until the report is given; call it on a thread of
// its own (an AdminTasks task), never on an I/O thread: the run's batches
// are answered there.
#pragma once

#include <functional>

#include "daemon/import_spool.h"
#include "daemon/import_stream.h"
#include "processors/jobs.h"

namespace feedd {

// `stop_error` gives the error the run is cut with once the job's stop was
// requested (cancelled, or unavailable when the daemon shuts down).
ImportReport RunImportJob(const SpooledBody& body, ImportRun& run, JobControl& job,
                          const std::function<Status()>& stop_error);

}  // namespace feedd
