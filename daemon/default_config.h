// DefaultConfigText(): configs/feedd.conf as it was when feedd was built.
// CMake copies the file into a generated source (daemon/CMakeLists.txt), so
// the file in the repository, the file the package installs (with its data
// directory) and this text are one. LoadConfig() takes the scenario - the
// [container.*] and [processor.*] sections - from it when a configuration
// declares none (daemon/options.h).
//
// Thread-safety: a constant.
#pragma once

#include <string_view>

namespace feedd {

std::string_view DefaultConfigText();

}  // namespace feedd
