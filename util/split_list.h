// SplitList: the one splitter of separated lists in feedd - option values
// ("a, b"), processor settings ("field=value,field=value"), HTTP list
// headers ("gzip, chunked").
//
// Each item comes back with the spaces and tabs around it removed. Empty
// items are kept ("a,,b" has three items, "" has none, "a," two), so each
// caller decides whether to skip or refuse them.
//
// Thread-safety: a pure function. The views point into `text`.
#pragma once

#include <string_view>
#include <vector>

namespace feedd {

std::vector<std::string_view> SplitList(std::string_view text, char separator = ',');

}  // namespace feedd
