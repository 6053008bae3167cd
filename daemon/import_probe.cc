#include "daemon/import_probe.h"

#include <string>

namespace feedd {

ImportProbe::ImportProbe(prometheus::Registry& registry)
    : running_(prometheus::BuildGauge()
                   .Name("feedd_imports_running")
                   .Help("Bulk imports (POST /v1/containers/{c}/import) in progress")
                   .Register(registry)
                   .Add({})),
      imports_(prometheus::BuildCounter()
                   .Name("feedd_imports_total")
                   .Help("Bulk imports by outcome: finished (reported), refused before "
                         "reading (max_concurrent), or import jobs whose body was not spooled "
                         "(spool_limit, no_space, spool_error, upload_failed)")
                   .Register(registry)),
      items_(prometheus::BuildCounter()
                 .Name("feedd_import_items_total")
                 .Help("Lines of bulk imports by outcome: created, replaced, skipped (the id "
                       "was there, ifExists=skip) or failed (a bad line, or refused)")
                 .Register(registry)),
      bytes_(prometheus::BuildCounter()
                 .Name("feedd_import_bytes_total")
                 .Help("Bytes of NDJSON read by bulk imports")
                 .Register(registry)
                 .Add({})) {
  for (const char* outcome :
       {"finished", "max_concurrent", "spool_limit", "no_space", "spool_error", "upload_failed"}) {
    imports_.Add({{"outcome", outcome}});
  }
  for (const char* outcome : {"created", "replaced", "skipped", "failed"}) {
    items_.Add({{"outcome", outcome}});
  }
}

void ImportProbe::Started() { running_.Increment(); }

void ImportProbe::Ended() { running_.Decrement(); }

void ImportProbe::Finished(const ImportTotals& totals) {
  imports_.Add({{"outcome", "finished"}}).Increment();
  items_.Add({{"outcome", "created"}}).Increment(static_cast<double>(totals.created));
  items_.Add({{"outcome", "replaced"}}).Increment(static_cast<double>(totals.replaced));
  items_.Add({{"outcome", "skipped"}}).Increment(static_cast<double>(totals.skipped));
  items_.Add({{"outcome", "failed"}}).Increment(static_cast<double>(totals.failed));
  bytes_.Increment(static_cast<double>(totals.bytes));
}

void ImportProbe::Refused(std::string_view reason) {
  imports_.Add({{"outcome", std::string(reason)}}).Increment();
}

}  // namespace feedd
