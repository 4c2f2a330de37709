#pragma once
// What a run record says about the build that made it: the version
// (FOXRL_VERSION, from the project) and the git commit, written into a
// generated source at every build (src/cmake/foxrlWriteCommit.cmake).

namespace foxrl {

/// The commit the library was built from: 12 hex digits, "+dirty" when the
/// checkout had uncommitted changes to tracked files, or "unknown" outside
/// a git checkout.
const char* build_commit();

}  // namespace foxrl
