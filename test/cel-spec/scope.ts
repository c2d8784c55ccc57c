// Which of cel-spec's test files test the CEL language svc offers, and the cases svc fails
// there, each with why (docs/conditions.md lists them). The other files test optional
// libraries svc does not enable (their functions are unknown to svc's checker, so a condition
// using one is refused when written) or need protobuf message types (cases.ts PROTO_RULES).
/** cel-spec files of extension libraries: not part of the language definition, not enabled in svc. */
export const EXTENSION_FILES = new Set(["bindings_ext", "block_ext", "encoders_ext", "math_ext", "network_ext", "optionals", "proto2_ext", "string_ext", "macros2"]);

/** file/section/name → how svc fails it. */
export const KNOWN_FAILURES: Record<string, string> = {
  "fields/quoted_map_fields/field_access_slash": "the parser has no backquoted field names (`{...}.`/api/v1``): a syntax error",
  "fields/quoted_map_fields/field_access_dash": "the parser has no backquoted field names: a syntax error",
  "fields/quoted_map_fields/field_access_dot": "the parser has no backquoted field names: a syntax error",
  "fields/quoted_map_fields/has_field_slash": "the parser has no backquoted field names: a syntax error",
  "fields/quoted_map_fields/has_field_dash": "the parser has no backquoted field names: a syntax error",
  "fields/quoted_map_fields/has_field_dot": "the parser has no backquoted field names: a syntax error",
  "namespace/namespace_shadowing/disambiguation": "the parser drops the leading dot of `.y`, so the container's com.example.y is read instead of y",
  "namespace/namespace_shadowing/comprehension_shadowing_disambiguation": "the leading dot of `.y` is dropped: the loop variable is read instead of the global y (false, not true)",
  "namespace/namespace_shadowing/comprehension_shadowing_namespaced_selector_disambiguation": "the leading dot of `.y.z` is dropped (false, not true)",
  "type_deduction/functions/function_result_type": "declared functions (type_env) are not supported: unknown function fn",
  "type_deduction/flexible_type_parameter_assignment/optional_none": "optional types are an extension svc does not enable: unknown variable optional",
  "type_deduction/flexible_type_parameter_assignment/optional_none_2": "optional types are not enabled: unknown variable optional",
  "type_deduction/flexible_type_parameter_assignment/optional_dyn_promotion": "optional types are not enabled: unknown variable optional",
  "type_deduction/flexible_type_parameter_assignment/optional_dyn_promotion_2": "optional types are not enabled: unknown variable optional",
  "type_deduction/flexible_type_parameter_assignment/optional_in_ternary": "optional types are not enabled: unknown variable optional",
  "type_deduction/type_parameters/multiple_parameters_generality": "declared functions with type parameters are not supported: unknown function tuple",
  "type_deduction/type_parameters/multiple_parameters_generality_2": "declared functions are not supported: unknown function tuple",
  "type_deduction/type_parameters/multiple_parameters_parameterized_ovl": "declared functions are not supported: unknown function tuple",
  "type_deduction/type_parameters/multiple_parameters_parameterized_ovl_2": "declared functions are not supported: unknown function tuple",
  "type_deduction/legacy_nullable_types/null_assignable_to_abstract_parameter_candidate": "optional types are not enabled: unknown variable optional",
};
