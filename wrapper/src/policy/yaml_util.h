// Strict YAML reading for the policy files: every map is checked against the keys it may hold, so
// a typo ("arch_list_by_cud") is an error with file:line instead of a silently ignored field.
#pragma once

#include "core/result.h"

#include <filesystem>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <yaml-cpp/yaml.h>

namespace forge::policy::yamlx {

// Parses a whole file; a syntax error names file:line.
Result<YAML::Node> load_file(const std::filesystem::path& path);
Result<YAML::Node> load_text(std::string_view text, const std::string& file);

// 1-based line of a node, nullopt when yaml-cpp has no mark (synthesised nodes).
std::optional<int> line_of(const YAML::Node& node);

Error error_at(const std::string& file, const YAML::Node& node, std::string key,
               std::string message);

// `node` must be a map whose keys are all in `allowed` (and unique); `where` names it in errors.
Status check_map(const std::string& file, const YAML::Node& node, std::string_view where,
                 std::initializer_list<std::string_view> allowed);
// `node` must be a map (any keys, unique).
Status check_any_map(const std::string& file, const YAML::Node& node, std::string_view where);

// A scalar as text; an error (naming `key`) for sequences, maps and nulls.
Result<std::string> scalar(const std::string& file, const YAML::Node& node, std::string_view key);
Result<bool> boolean(const std::string& file, const YAML::Node& node, std::string_view key);
Result<long> integer(const std::string& file, const YAML::Node& node, std::string_view key);

} // namespace forge::policy::yamlx
