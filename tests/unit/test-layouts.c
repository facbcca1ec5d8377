/* SPDX-License-Identifier: Apache-2.0 */
/* The public API's layouts, pinned (the plugin ABI's are in test-abi.c), and the rule of the
 * structures that grow (docs/stability.md): output structures written only up to the caller's
 * struct_size, sizes below the first layout refused, input structures and kp_arg checked. The
 * numbers are those of LP64 targets (x86-64, AArch64), where they are checked at compile time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "kernelport/kernelport.h"
#include "kernelport/ops/gru.h"
#include "kernelport/ops/optim.h"
#include "kernelport/ca.h"
#include "kernelport/ops/logic-ca.h"
#include "kernelport/solve.h"
#include "struct-size.h"
#include "test-util.h"

#if defined(__LP64__)
#define PIN(type, field, offset)                                                                   \
    _Static_assert(offsetof(type, field) == (offset), #type "." #field " moved")

/* kp_runtime_options */
_Static_assert(sizeof(kp_runtime_options) == 72, "kp_runtime_options size");
PIN(kp_runtime_options, struct_size, 0);
PIN(kp_runtime_options, flags, 4);
PIN(kp_runtime_options, manifest_path, 8);
PIN(kp_runtime_options, plugin_dirs, 16);
PIN(kp_runtime_options, n_plugin_dirs, 24);
PIN(kp_runtime_options, device, 32);
PIN(kp_runtime_options, log, 40);
PIN(kp_runtime_options, log_user, 48);
PIN(kp_runtime_options, log_level, 56);
PIN(kp_runtime_options, cache_dir, 64);
/* kp_device_info */
_Static_assert(sizeof(kp_device_info) == 1040, "kp_device_info size");
PIN(kp_device_info, struct_size, 0);
PIN(kp_device_info, vendor, 4);
PIN(kp_device_info, type, 8);
PIN(kp_device_info, index, 12);
PIN(kp_device_info, name, 16);
PIN(kp_device_info, vendor_string, 272);
PIN(kp_device_info, platform, 400);
PIN(kp_device_info, driver, 528);
PIN(kp_device_info, version, 656);
PIN(kp_device_info, c_version, 784);
PIN(kp_device_info, arch, 848);
PIN(kp_device_info, pci_bus, 912);
PIN(kp_device_info, uuid, 944);
PIN(kp_device_info, has_uuid, 960);
PIN(kp_device_info, vendor_id, 964);
PIN(kp_device_info, compute_units, 968);
PIN(kp_device_info, clock_mhz, 972);
PIN(kp_device_info, global_mem, 976);
PIN(kp_device_info, local_mem, 984);
PIN(kp_device_info, max_alloc, 992);
PIN(kp_device_info, max_workgroup, 1000);
PIN(kp_device_info, max_work_item, 1008);
PIN(kp_device_info, fp16, 1032);
PIN(kp_device_info, fp64, 1036);
/* kp_tensor */
_Static_assert(sizeof(kp_tensor) == 152, "kp_tensor size");
PIN(kp_tensor, buffer, 0);
PIN(kp_tensor, dtype, 8);
PIN(kp_tensor, rank, 12);
PIN(kp_tensor, offset, 16);
PIN(kp_tensor, shape, 24);
PIN(kp_tensor, strides, 88);
/* kp_arg */
_Static_assert(sizeof(kp_arg) == 184, "kp_arg size");
PIN(kp_arg, name, 0);
PIN(kp_arg, kind, 8);
PIN(kp_arg, struct_size, 12);
PIN(kp_arg, tensor, 16);
PIN(kp_arg, i, 168);
PIN(kp_arg, f, 176);
/* kp_param_info */
_Static_assert(sizeof(kp_param_info) == 56, "kp_param_info size");
PIN(kp_param_info, struct_size, 0);
PIN(kp_param_info, name, 8);
PIN(kp_param_info, doc, 16);
PIN(kp_param_info, kind, 24);
PIN(kp_param_info, access, 28);
PIN(kp_param_info, dtypes, 32);
PIN(kp_param_info, optional, 36);
PIN(kp_param_info, int_default, 40);
PIN(kp_param_info, float_default, 48);
/* kp_kernel_info */
_Static_assert(sizeof(kp_kernel_info) == 64, "kp_kernel_info size");
PIN(kp_kernel_info, struct_size, 0);
PIN(kp_kernel_info, name, 8);
PIN(kp_kernel_info, summary, 16);
PIN(kp_kernel_info, plugin, 24);
PIN(kp_kernel_info, plugin_path, 32);
PIN(kp_kernel_info, source_name, 40);
PIN(kp_kernel_info, n_params, 48);
PIN(kp_kernel_info, n_tunables, 56);
/* kp_tuning_info */
_Static_assert(sizeof(kp_tuning_info) == 80, "kp_tuning_info size");
PIN(kp_tuning_info, struct_size, 0);
PIN(kp_tuning_info, name, 8);
PIN(kp_tuning_info, doc, 16);
PIN(kp_tuning_info, value, 24);
PIN(kp_tuning_info, default_value, 32);
PIN(kp_tuning_info, value_text, 40);
PIN(kp_tuning_info, origin, 48);
PIN(kp_tuning_info, allowed, 56);
PIN(kp_tuning_info, notes, 64);
PIN(kp_tuning_info, provenance, 72);
/* kp_manifest_layer */
_Static_assert(sizeof(kp_manifest_layer) == 32, "kp_manifest_layer size");
PIN(kp_manifest_layer, struct_size, 0);
PIN(kp_manifest_layer, name, 8);
PIN(kp_manifest_layer, path, 16);
PIN(kp_manifest_layer, read, 24);
/* kp_graph_info */
_Static_assert(sizeof(kp_graph_info) == 56, "kp_graph_info size");
PIN(kp_graph_info, struct_size, 0);
PIN(kp_graph_info, n_launches, 8);
PIN(kp_graph_info, n_transfers, 16);
PIN(kp_graph_info, n_direct, 24);
PIN(kp_graph_info, n_commands, 32);
PIN(kp_graph_info, n_command_buffers, 40);
PIN(kp_graph_info, n_params, 48);
/* kp_plugin_record */
_Static_assert(sizeof(kp_plugin_record) == 48, "kp_plugin_record size");
PIN(kp_plugin_record, struct_size, 0);
PIN(kp_plugin_record, path, 8);
PIN(kp_plugin_record, name, 16);
PIN(kp_plugin_record, version, 24);
PIN(kp_plugin_record, reason, 32);
PIN(kp_plugin_record, n_kernels, 40);
/* kp_verify_result */
_Static_assert(sizeof(kp_verify_result) == 96, "kp_verify_result size");
PIN(kp_verify_result, struct_size, 0);
PIN(kp_verify_result, kernel, 8);
PIN(kp_verify_result, size, 16);
PIN(kp_verify_result, output, 24);
PIN(kp_verify_result, elements, 32);
PIN(kp_verify_result, max_abs_err, 40);
PIN(kp_verify_result, max_rel_err, 48);
PIN(kp_verify_result, atol, 56);
PIN(kp_verify_result, rtol, 64);
PIN(kp_verify_result, worst_index, 72);
PIN(kp_verify_result, failures, 80);
PIN(kp_verify_result, passed, 88);
/* kp_peak */
_Static_assert(sizeof(kp_peak) == 112, "kp_peak size");
PIN(kp_peak, struct_size, 0);
PIN(kp_peak, bandwidth_gbs, 8);
PIN(kp_peak, read_gbs, 16);
PIN(kp_peak, copy_gbs, 24);
PIN(kp_peak, triad_gbs, 32);
PIN(kp_peak, vector_width, 40);
PIN(kp_peak, fp32_gflops, 48);
PIN(kp_peak, launch_us, 56);
PIN(kp_peak, roundtrip_us, 64);
PIN(kp_peak, from_cache, 72);
PIN(kp_peak, measured, 76);
/* kp_bench_options */
_Static_assert(sizeof(kp_bench_options) == 32, "kp_bench_options size");
PIN(kp_bench_options, struct_size, 0);
PIN(kp_bench_options, warmup, 4);
PIN(kp_bench_options, min_runs, 8);
PIN(kp_bench_options, max_runs, 12);
PIN(kp_bench_options, min_seconds, 16);
PIN(kp_bench_options, seed, 24);
/* kp_bench_result */
_Static_assert(sizeof(kp_bench_result) == 80, "kp_bench_result size");
PIN(kp_bench_result, struct_size, 0);
PIN(kp_bench_result, runs, 4);
PIN(kp_bench_result, median_s, 8);
PIN(kp_bench_result, min_s, 16);
PIN(kp_bench_result, max_s, 24);
PIN(kp_bench_result, p10_s, 32);
PIN(kp_bench_result, p90_s, 40);
PIN(kp_bench_result, flops, 48);
PIN(kp_bench_result, bytes, 56);
PIN(kp_bench_result, gflops, 64);
PIN(kp_bench_result, gbs, 72);
/* kp_tune_step */
_Static_assert(sizeof(kp_tune_step) == 48, "kp_tune_step size");
PIN(kp_tune_step, struct_size, 0);
PIN(kp_tune_step, kernel, 8);
PIN(kp_tune_step, values, 16);
PIN(kp_tune_step, n_values, 24);
PIN(kp_tune_step, median_s, 32);
PIN(kp_tune_step, outcome, 40);
/* kp_tune_options */
_Static_assert(sizeof(kp_tune_options) == 64, "kp_tune_options size");
PIN(kp_tune_options, struct_size, 0);
PIN(kp_tune_options, size, 8);
PIN(kp_tune_options, budget_seconds, 16);
PIN(kp_tune_options, grid_limit, 24);
PIN(kp_tune_options, bench, 32);
PIN(kp_tune_options, report, 40);
PIN(kp_tune_options, user, 48);
PIN(kp_tune_options, tunables, 56);
/* kp_tune_result */
_Static_assert(sizeof(kp_tune_result) == 1096, "kp_tune_result size");
PIN(kp_tune_result, struct_size, 0);
PIN(kp_tune_result, n_values, 8);
PIN(kp_tune_result, values, 16);
PIN(kp_tune_result, default_s, 1040);
PIN(kp_tune_result, best_s, 1048);
PIN(kp_tune_result, speedup, 1056);
PIN(kp_tune_result, tried, 1064);
PIN(kp_tune_result, skipped, 1068);
PIN(kp_tune_result, rejected, 1072);
PIN(kp_tune_result, exhaustive, 1076);
PIN(kp_tune_result, noise, 1080);
PIN(kp_tune_result, improved, 1088);
/* kp_tuning_match */
_Static_assert(sizeof(kp_tuning_match) == 40, "kp_tuning_match size");
PIN(kp_tuning_match, struct_size, 0);
PIN(kp_tuning_match, vendor, 8);
PIN(kp_tuning_match, type, 16);
PIN(kp_tuning_match, name, 24);
PIN(kp_tuning_match, arch, 32);
/* kp_tuned_value */
_Static_assert(sizeof(kp_tuned_value) == 24, "kp_tuned_value size");
PIN(kp_tuned_value, kernel, 0);
PIN(kp_tuned_value, name, 8);
PIN(kp_tuned_value, value, 16);
/* kp_gru_rollout_args */
_Static_assert(sizeof(kp_gru_rollout_args) == 2472, "kp_gru_rollout_args size");
PIN(kp_gru_rollout_args, struct_size, 0);
PIN(kp_gru_rollout_args, w_ih, 8);
PIN(kp_gru_rollout_args, w_hh, 160);
PIN(kp_gru_rollout_args, b_ih, 312);
PIN(kp_gru_rollout_args, b_hh, 464);
PIN(kp_gru_rollout_args, w_p, 616);
PIN(kp_gru_rollout_args, b_p, 768);
PIN(kp_gru_rollout_args, w_y, 920);
PIN(kp_gru_rollout_args, b_y, 1072);
PIN(kp_gru_rollout_args, f, 1224);
PIN(kp_gru_rollout_args, y0, 1376);
PIN(kp_gru_rollout_args, z0, 1528);
PIN(kp_gru_rollout_args, h0, 1680);
PIN(kp_gru_rollout_args, y, 1832);
PIN(kp_gru_rollout_args, h_T, 1984);
PIN(kp_gru_rollout_args, entropy, 2136);
PIN(kp_gru_rollout_args, hnorm, 2288);
PIN(kp_gru_rollout_args, T, 2440);
PIN(kp_gru_rollout_args, mode, 2448);
PIN(kp_gru_rollout_args, seed, 2456);
PIN(kp_gru_rollout_args, linear_before_reset, 2464);
/* kp_gru_rollout_metrics */
_Static_assert(sizeof(kp_gru_rollout_metrics) == 56, "kp_gru_rollout_metrics size");
PIN(kp_gru_rollout_metrics, struct_size, 0);
PIN(kp_gru_rollout_metrics, mean_abs_delta, 8);
PIN(kp_gru_rollout_metrics, smoothness, 16);
PIN(kp_gru_rollout_metrics, trajectory_variance, 24);
PIN(kp_gru_rollout_metrics, ensemble_variance, 32);
PIN(kp_gru_rollout_metrics, ensemble_spread, 40);
PIN(kp_gru_rollout_metrics, final_spread, 48);
/* kp_adam_options */
_Static_assert(sizeof(kp_adam_options) == 104, "kp_adam_options size");
PIN(kp_adam_options, struct_size, 0);
PIN(kp_adam_options, lr, 8);
PIN(kp_adam_options, beta1, 16);
PIN(kp_adam_options, beta2, 24);
PIN(kp_adam_options, eps, 32);
PIN(kp_adam_options, weight_decay, 40);
PIN(kp_adam_options, amsgrad, 48);
PIN(kp_adam_options, maximize, 52);
PIN(kp_adam_options, max_exp_avg_sq, 56);
PIN(kp_adam_options, master, 64);
PIN(kp_adam_options, segments, 72);
PIN(kp_adam_options, scales, 80);
PIN(kp_adam_options, grad_mul, 88);
PIN(kp_adam_options, check_segments, 96);
/* kp_sgd_options */
_Static_assert(sizeof(kp_sgd_options) == 88, "kp_sgd_options size");
PIN(kp_sgd_options, struct_size, 0);
PIN(kp_sgd_options, lr, 8);
PIN(kp_sgd_options, momentum, 16);
PIN(kp_sgd_options, dampening, 24);
PIN(kp_sgd_options, weight_decay, 32);
PIN(kp_sgd_options, nesterov, 40);
PIN(kp_sgd_options, maximize, 44);
PIN(kp_sgd_options, master, 48);
PIN(kp_sgd_options, segments, 56);
PIN(kp_sgd_options, scales, 64);
PIN(kp_sgd_options, grad_mul, 72);
PIN(kp_sgd_options, check_segments, 80);

/* The first layouts: a caller's struct_size may stop here and no lower. */
/* solve.h (#27) */
/* kp_expr */
_Static_assert(sizeof(kp_expr) == 4, "kp_expr size");
PIN(kp_expr, id, 0);
/* kp_expr_graph_info */
_Static_assert(sizeof(kp_expr_graph_info) == 32, "kp_expr_graph_info size");
PIN(kp_expr_graph_info, struct_size, 0);
PIN(kp_expr_graph_info, n_data, 4);
PIN(kp_expr_graph_info, n_params, 8);
PIN(kp_expr_graph_info, n_outputs, 12);
PIN(kp_expr_graph_info, n_nodes, 16);
PIN(kp_expr_graph_info, key, 24);
/* kp_lm_options */
_Static_assert(sizeof(kp_lm_options) == 64, "kp_lm_options size");
PIN(kp_lm_options, struct_size, 0);
PIN(kp_lm_options, max_iterations, 4);
PIN(kp_lm_options, gradient_tolerance, 8);
PIN(kp_lm_options, step_tolerance, 16);
PIN(kp_lm_options, function_tolerance, 24);
PIN(kp_lm_options, initial_damping, 32);
PIN(kp_lm_options, min_diagonal, 40);
PIN(kp_lm_options, loss, 48);
PIN(kp_lm_options, loss_scale, 56);
/* kp_lm_batch */
_Static_assert(sizeof(kp_lm_batch) == 88, "kp_lm_batch size");
PIN(kp_lm_batch, struct_size, 0);
PIN(kp_lm_batch, n_problems, 8);
PIN(kp_lm_batch, rows, 16);
PIN(kp_lm_batch, data, 24);
PIN(kp_lm_batch, x, 32);
PIN(kp_lm_batch, cost, 40);
PIN(kp_lm_batch, iterations, 48);
PIN(kp_lm_batch, status, 56);
PIN(kp_lm_batch, seconds, 64);
/* kp_lm_sparse_problem */
_Static_assert(sizeof(kp_lm_sparse_problem) == 48, "kp_lm_sparse_problem size");
PIN(kp_lm_sparse_problem, struct_size, 0);
PIN(kp_lm_sparse_problem, n_instances, 8);
PIN(kp_lm_sparse_problem, data, 16);
PIN(kp_lm_sparse_problem, index, 24);
PIN(kp_lm_sparse_problem, n_x, 32);
PIN(kp_lm_sparse_problem, x, 40);
/* kp_lm_sparse_progress */
_Static_assert(sizeof(kp_lm_sparse_progress) == 56, "kp_lm_sparse_progress size");
PIN(kp_lm_sparse_progress, iteration, 0);
PIN(kp_lm_sparse_progress, cg_iterations, 4);
PIN(kp_lm_sparse_progress, cost, 8);
PIN(kp_lm_sparse_progress, damping, 16);
PIN(kp_lm_sparse_progress, accepted, 24);
PIN(kp_lm_sparse_progress, gradient_max, 32);
PIN(kp_lm_sparse_progress, cg_residual, 40);
PIN(kp_lm_sparse_progress, dense, 48);
/* kp_lm_sparse_options */
_Static_assert(sizeof(kp_lm_sparse_options) == 48, "kp_lm_sparse_options size");
PIN(kp_lm_sparse_options, struct_size, 0);
PIN(kp_lm_sparse_options, max_cg_iterations, 4);
PIN(kp_lm_sparse_options, lm, 8);
PIN(kp_lm_sparse_options, cg_tolerance, 16);
PIN(kp_lm_sparse_options, progress, 24);
PIN(kp_lm_sparse_options, user, 32);
PIN(kp_lm_sparse_options, block_size, 40);
PIN(kp_lm_sparse_options, dense_max_parameters, 44);
/* kp_lm_sparse_report */
_Static_assert(sizeof(kp_lm_sparse_report) == 80, "kp_lm_sparse_report size");
PIN(kp_lm_sparse_report, struct_size, 0);
PIN(kp_lm_sparse_report, status, 4);
PIN(kp_lm_sparse_report, iterations, 8);
PIN(kp_lm_sparse_report, cg_iterations, 16);
PIN(kp_lm_sparse_report, initial_cost, 24);
PIN(kp_lm_sparse_report, cost, 32);
PIN(kp_lm_sparse_report, seconds, 40);
PIN(kp_lm_sparse_report, dense, 72);
/* ca.h and ops/logic-ca.h (#26) */
/* kp_logic_ca_net */
_Static_assert(sizeof(kp_logic_ca_net) == 96, "kp_logic_ca_net size");
PIN(kp_logic_ca_net, channels, 0);
PIN(kp_logic_ca_net, kernels, 4);
PIN(kp_logic_ca_net, n_layers, 8);
PIN(kp_logic_ca_net, n_perceive_layers, 12);
PIN(kp_logic_ca_net, n_gates, 16);
PIN(kp_logic_ca_net, n_params, 24);
PIN(kp_logic_ca_net, n_rows, 32);
PIN(kp_logic_ca_net, layers, 40);
PIN(kp_logic_ca_net, a_idx, 48);
PIN(kp_logic_ca_net, b_idx, 56);
PIN(kp_logic_ca_net, param, 64);
PIN(kp_logic_ca_net, param_start, 72);
PIN(kp_logic_ca_net, csr_start, 80);
PIN(kp_logic_ca_net, csr_entries, 88);
/* kp_logic_ca_config */
_Static_assert(sizeof(kp_logic_ca_config) == 192, "kp_logic_ca_config size");
PIN(kp_logic_ca_config, struct_size, 0);
PIN(kp_logic_ca_config, channels, 4);
PIN(kp_logic_ca_config, kernels, 8);
PIN(kp_logic_ca_config, n_perceive, 12);
PIN(kp_logic_ca_config, perceive, 16);
PIN(kp_logic_ca_config, n_update, 48);
PIN(kp_logic_ca_config, update, 52);
PIN(kp_logic_ca_config, seed, 184);
/* kp_ca_options */
_Static_assert(sizeof(kp_ca_options) == 128, "kp_ca_options size");
PIN(kp_ca_options, struct_size, 0);
PIN(kp_ca_options, net, 8);
PIN(kp_ca_options, height, 16);
PIN(kp_ca_options, width, 20);
PIN(kp_ca_options, batch, 24);
PIN(kp_ca_options, steps, 28);
PIN(kp_ca_options, boundary, 32);
PIN(kp_ca_options, fire_rate, 40);
PIN(kp_ca_options, random_init, 48);
PIN(kp_ca_options, seed, 56);
PIN(kp_ca_options, inference_only, 64);
PIN(kp_ca_options, lr, 72);
PIN(kp_ca_options, beta1, 80);
PIN(kp_ca_options, beta2, 88);
PIN(kp_ca_options, eps, 96);
PIN(kp_ca_options, weight_decay, 104);
PIN(kp_ca_options, clip_norm, 112);
PIN(kp_ca_options, clip_elementwise, 120);
/* kp_ca_packed_options */
_Static_assert(sizeof(kp_ca_packed_options) == 24, "kp_ca_packed_options size");
PIN(kp_ca_packed_options, struct_size, 0);
PIN(kp_ca_packed_options, height, 4);
PIN(kp_ca_packed_options, width, 8);
PIN(kp_ca_packed_options, batch, 12);
PIN(kp_ca_packed_options, tile_bytes, 16);
_Static_assert(KP__FIRST_kp_runtime_options == 60, "kp_runtime_options first layout");
_Static_assert(KP__FIRST_kp_device_info == 1040, "kp_device_info first layout");
_Static_assert(KP__FIRST_kp_param_info == 56, "kp_param_info first layout");
_Static_assert(KP__FIRST_kp_kernel_info == 64, "kp_kernel_info first layout");
_Static_assert(KP__FIRST_kp_tuning_info == 72, "kp_tuning_info first layout");
_Static_assert(KP__FIRST_kp_manifest_layer == 28, "kp_manifest_layer first layout");
_Static_assert(KP__FIRST_kp_graph_info == 56, "kp_graph_info first layout");
_Static_assert(KP__FIRST_kp_plugin_record == 48, "kp_plugin_record first layout");
_Static_assert(KP__FIRST_kp_peak == 108, "kp_peak first layout");
_Static_assert(KP__FIRST_kp_bench_options == 32, "kp_bench_options first layout");
_Static_assert(KP__FIRST_kp_bench_result == 80, "kp_bench_result first layout");
_Static_assert(KP__FIRST_kp_tune_options == 64, "kp_tune_options first layout");
_Static_assert(KP__FIRST_kp_tune_result == 1080, "kp_tune_result first layout");
_Static_assert(KP__FIRST_kp_tuning_match == 40, "kp_tuning_match first layout");
_Static_assert(KP_LOGIC_CA_CONFIG_FIRST == 192, "kp_logic_ca_config first layout");
#endif

/* Every structure the public headers define, pinned above. */
static const char *const pinned[] = {
    "kp_runtime_options",     "kp_device_info",       "kp_tensor",           "kp_arg",
    "kp_param_info",          "kp_kernel_info",       "kp_tuning_info",      "kp_manifest_layer",
    "kp_graph_info",          "kp_plugin_record",     "kp_verify_result",    "kp_peak",
    "kp_bench_options",       "kp_bench_result",      "kp_tune_step",        "kp_tune_options",
    "kp_tune_result",         "kp_tuning_match",      "kp_tuned_value",      "kp_gru_rollout_args",
    "kp_gru_rollout_metrics", "kp_adam_options",      "kp_sgd_options",      "kp_expr",
    "kp_expr_graph_info",     "kp_lm_options",        "kp_lm_batch",         "kp_lm_sparse_problem",
    "kp_lm_sparse_progress",  "kp_lm_sparse_options", "kp_lm_sparse_report", "kp_ca_options",
    "kp_ca_packed_options",   "kp_logic_ca_config",   "kp_logic_ca_net"};

/* The pinned value types (docs/stability.md), which never grow and so may be members by value;
 * any other structure is a member through a pointer, so that each grows by its own
 * struct_size. */
static const char *const value_types[] = {"kp_tensor", "kp_tuned_value"};

static int is_in(const char *name, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(list[i], name) == 0)
            return 1;
    return 0;
}

/* Fails when the body of struct `name` (from its '{' at `body`) has a member of a pinned
 * structure, not a value type, by value. */
static void check_members(const char *header, const char *name, const char *body)
{
    for (const char *line = body; line && *line != '}'; line = strchr(line + 1, '\n')) {
        char type[128], next = 0;
        const char *decl = line + strspn(line, "\n ");
        if (strncmp(decl, "const ", 6) == 0)
            decl += 6;
        if (sscanf(decl, "%127[a-z0-9_] %c", type, &next) == 2 && next != '*' &&
            is_in(type, pinned, sizeof pinned / sizeof pinned[0]) &&
            !is_in(type, value_types, sizeof value_types / sizeof value_types[0]))
            fail_msg("%s: struct %s has a %s member by value: it could not grow (point at it)",
                     header, name, type);
        if (*decl == '}')
            break;
    }
}

/* Each "typedef struct NAME {" of `header` must be in `pinned`; how many it saw. */
static int check_header(const char *header)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/../../include/kernelport/%s", test_env("KP_TEST_FIXTURES"),
             header);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    static char text[1 << 20];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    int seen = 0;
    for (const char *at = strstr(text, "typedef struct "); at;
         at = strstr(at + 1, "typedef struct ")) {
        char name[128];
        char brace = 0;
        if (sscanf(at, "typedef struct %127[a-z0-9_] %c", name, &brace) != 2 || brace != '{')
            continue; /* an opaque handle */
        if (!is_in(name, pinned, sizeof pinned / sizeof pinned[0]))
            fail_msg("%s: struct %s has no pinned layout in test-layouts.c", header, name);
        check_members(header, name, strchr(at, '{') + 1);
        seen++;
    }
    return seen;
}

static void test_every_public_struct_is_pinned(void **state)
{
    assert_int_equal(check_header("kernelport.h"), 18);
    assert_int_equal(check_header("tensor.h"), 1);
    assert_int_equal(check_header("ops/gru.h"), 2);
    assert_int_equal(check_header("ops/optim.h"), 2);
    assert_int_equal(check_header("solve.h"), 8);
    assert_int_equal(check_header("ca.h"), 2);
    assert_int_equal(check_header("ops/logic-ca.h"), 2);
    const char *none[] = {"ops/logic.h", "ops/random.h", "ops/tc.h", "ops/tensor.h"};
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++)
        assert_int_equal(check_header(none[i]), 0);
}

static kp_runtime *host_runtime(void)
{
    kp_runtime_options o = test_options(test_build_path(KP_TEST_EXAMPLE_PLUGIN_DIR), "host", NULL);
    kp_runtime *rt = NULL;
    assert_int_equal(kp_runtime_create(&o, &rt), KP_OK);
    return rt;
}

/* A struct_size below the first layout is refused, with a message naming the structure, and
 * nothing is written. */
static void test_too_small_is_refused(void **state)
{
    kp_runtime *rt = host_runtime();
    kp_kernel *k;
    assert_int_equal(kp_kernel_find(rt, "example.axpy", &k), KP_OK);

    kp_kernel_info info;
    memset(&info, 0xa5, sizeof info);
    info.struct_size = 8;
    assert_int_equal(kp_kernel_info_get(k, &info), KP_ERR_INVALID_ARG);
    assert_string_equal(kp_last_error(NULL),
                        "kp_kernel_info_get: kp_kernel_info.struct_size is 8, below 64 (its first "
                        "layout): set it to sizeof(kp_kernel_info) before the call");
    assert_int_equal(info.struct_size, 8);
    assert_int_equal(((const unsigned char *)&info)[sizeof info - 1], 0xa5);

    kp_device_info d = {0};
    assert_int_equal(kp_runtime_device(rt, &d, NULL), KP_ERR_INVALID_ARG);
    assert_non_null(strstr(kp_last_error(rt), "kp_device_info.struct_size is 0"));
    assert_string_equal(d.name, "");

    kp_tuning_info t = {.struct_size = KP__FIRST_kp_tuning_info - 1};
    assert_int_equal(kp_kernel_tuning(rt, k, 0, &t), KP_ERR_INVALID_ARG);
    assert_non_null(strstr(kp_last_error(rt), "kp_kernel_tuning: kp_tuning_info.struct_size"));
    assert_null(t.name);

    kp_plugin_record rec = {.struct_size = 4};
    assert_int_equal(kp_plugin_get(rt, 0, &rec), KP_ERR_INVALID_ARG);
    assert_non_null(strstr(kp_last_error(rt), "kp_plugin_get: kp_plugin_record.struct_size is 4"));
    kp_param_info p = {.struct_size = 1};
    assert_int_equal(kp_kernel_param(k, 0, &p), KP_ERR_INVALID_ARG);
    assert_non_null(strstr(kp_last_error(NULL), "kp_param_info.struct_size is 1"));
    kp_bench_result br = {.struct_size = 0};
    assert_int_equal(kp_kernel_bench(rt, k, "small", NULL, &br), KP_ERR_INVALID_ARG);
    assert_non_null(strstr(kp_last_error(rt), "kp_bench_result.struct_size is 0"));
    /* The runtime stays usable. */
    info.struct_size = sizeof info;
    assert_int_equal(kp_kernel_info_get(k, &info), KP_OK);
    assert_string_equal(info.name, "example.axpy");
    kp_runtime_destroy(rt);
}

/* A caller compiled with an older (smaller) layout gets its prefix and nothing past it; one
 * compiled with a newer (larger) layout gets this library's whole structure, and struct_size
 * says how much that was. */
static void test_only_the_callers_bytes_are_written(void **state)
{
    kp_runtime *rt = host_runtime();
    /* kp_manifest_layer's first layout (28 bytes) stops before its tail padding. */
    union {
        kp_manifest_layer l;
        unsigned char bytes[sizeof(kp_manifest_layer) + 16];
    } u;
    memset(&u, 0xa5, sizeof u);
    u.l.struct_size = KP__FIRST_kp_manifest_layer;
    assert_int_equal(kp_runtime_manifest_layer(rt, 0, &u.l), KP_OK);
    assert_int_equal(u.l.struct_size, KP__FIRST_kp_manifest_layer);
    assert_string_equal(u.l.name, "built-in");
    assert_int_equal(u.l.read, 1);
    for (size_t i = KP__FIRST_kp_manifest_layer; i < sizeof u.bytes; i++)
        assert_int_equal(u.bytes[i], 0xa5);

    memset(&u, 0xa5, sizeof u);
    u.l.struct_size = sizeof u.bytes;
    assert_int_equal(kp_runtime_manifest_layer(rt, 0, &u.l), KP_OK);
    assert_int_equal(u.l.struct_size, sizeof(kp_manifest_layer));
    for (size_t i = sizeof(kp_manifest_layer); i < sizeof u.bytes; i++)
        assert_int_equal(u.bytes[i], 0xa5);

    union {
        kp_device_info d;
        unsigned char bytes[sizeof(kp_device_info) + 8];
    } v;
    memset(&v, 0xa5, sizeof v);
    v.d.struct_size = sizeof v.bytes;
    assert_int_equal(kp_device_get(rt, 0, &v.d), KP_OK);
    assert_int_equal(v.d.struct_size, sizeof(kp_device_info));
    assert_true(v.d.name[0] != '\0');
    for (size_t i = sizeof(kp_device_info); i < sizeof v.bytes; i++)
        assert_int_equal(v.bytes[i], 0xa5);
    kp_runtime_destroy(rt);
}

/* The helper itself, with a structure that grew: version 2 written into a version 1 caller. */
typedef struct grown_v1 {
    uint32_t struct_size;
    int32_t a;
} grown_v1;
typedef struct grown_v2 {
    uint32_t struct_size;
    int32_t a;
    int64_t b;
} grown_v2;

static void test_a_grown_structure_keeps_old_callers_working(void **state)
{
    union {
        grown_v1 v1;
        unsigned char bytes[sizeof(grown_v2)];
    } caller;
    memset(&caller, 0xa5, sizeof caller);
    caller.v1.struct_size = sizeof caller.v1;
    assert_int_equal(kp__out_check(NULL, "call", "grown", &caller, sizeof(grown_v1)), KP_OK);
    const grown_v2 full = {.struct_size = sizeof full, .a = 7, .b = 9};
    kp__out_write(&caller, &full, sizeof full);
    assert_int_equal(caller.v1.struct_size, sizeof(grown_v1));
    assert_int_equal(caller.v1.a, 7);
    for (size_t i = sizeof(grown_v1); i < sizeof caller.bytes; i++)
        assert_int_equal(caller.bytes[i], 0xa5);

    /* An input structure from an older caller: members past it keep the library's defaults. */
    grown_v2 dst = {.struct_size = sizeof dst, .a = 1, .b = 42};
    const grown_v1 old = {.struct_size = sizeof old, .a = 5};
    assert_int_equal(kp__in_copy(NULL, "call", "grown", &dst, &old, sizeof old, sizeof dst), KP_OK);
    assert_int_equal(dst.a, 5);
    assert_int_equal(dst.b, 42);
    assert_int_equal(dst.struct_size, sizeof dst);
}

/* Input structures: 0 stands for the first layout; too small, or larger with a member this
 * version does not know set, is refused. */
static void test_input_structures(void **state)
{
    kp_runtime_options o = test_options(test_build_path(KP_TEST_EXAMPLE_PLUGIN_DIR), "host", NULL);
    kp_runtime *rt = NULL;
    o.struct_size = 12;
    assert_int_equal(kp_runtime_create(&o, &rt), KP_ERR_INVALID_ARG);
    assert_non_null(
        strstr(kp_last_error(NULL), "kp_runtime_create: kp_runtime_options.struct_size is 12"));
    assert_null(rt);

    union {
        kp_runtime_options o;
        unsigned char bytes[sizeof(kp_runtime_options) + 8];
    } newer;
    memset(&newer, 0, sizeof newer);
    newer.o = o;
    newer.o.struct_size = sizeof newer.bytes;
    assert_int_equal(kp_runtime_create(&newer.o, &rt), KP_OK);
    kp_runtime_destroy(rt);
    rt = NULL;
    newer.bytes[sizeof(kp_runtime_options) + 3] = 1;
    assert_int_equal(kp_runtime_create(&newer.o, &rt), KP_ERR_INVALID_ARG);
    assert_non_null(strstr(kp_last_error(NULL), "a member this version does not know"));
    assert_null(rt);

    o.struct_size = 0;
    assert_int_equal(kp_runtime_create(&o, &rt), KP_OK);
    kp_kernel *k;
    assert_int_equal(kp_kernel_find(rt, "example.axpy", &k), KP_OK);
    kp_bench_options bo = kp_bench_options_default();
    bo.struct_size = 16;
    kp_bench_result br = {.struct_size = sizeof br};
    assert_int_equal(kp_kernel_bench(rt, k, "small", &bo, &br), KP_ERR_INVALID_ARG);
    assert_non_null(strstr(kp_last_error(rt), "kp_kernel_bench: kp_bench_options.struct_size"));
    kp_runtime_destroy(rt);

    /* kp_manifest_write_tuning refuses before touching the file. */
    const kp_tuning_match bad = {.struct_size = 3, .vendor = "pocl"};
    const kp_tuned_value v = {.kernel = "example.axpy", .name = "WG", .value = "64"};
    assert_int_equal(kp_manifest_write_tuning("/nonexistent/dir/m.yaml", &bad, &v, 1, NULL, 0),
                     KP_ERR_INVALID_ARG);
    assert_non_null(strstr(kp_last_error(NULL), "kp_tuning_match.struct_size is 3"));
}

/* kp_arg: the constructors set struct_size, 0 is the same layout, anything else is refused
 * with the argument named. */
static void test_arg_struct_size(void **state)
{
    kp_runtime *rt = host_runtime();
    kp_kernel *k;
    assert_int_equal(kp_kernel_find(rt, "example.axpy", &k), KP_OK);
    kp_buffer *x, *y;
    assert_int_equal(kp_buffer_create(rt, 16 * sizeof(float), &x), KP_OK);
    assert_int_equal(kp_buffer_create(rt, 16 * sizeof(float), &y), KP_OK);
    kp_arg args[4] = {kp_arg_int("n", 16), kp_arg_float("alpha", 2.0),
                      kp_arg_tensor("x", kp_tensor_1d(x, KP_F32, 16)),
                      kp_arg_tensor("y", kp_tensor_1d(y, KP_F32, 16))};
    assert_int_equal(args[0].struct_size, sizeof(kp_arg));
    assert_int_equal(kp_kernel_launch(rt, k, args, 4, NULL), KP_OK);
    /* Designated initialisers leave it 0: the same layout. */
    args[2] =
        (kp_arg){.name = "x", .kind = KP_ARG_KIND_TENSOR, .tensor = kp_tensor_1d(x, KP_F32, 16)};
    assert_int_equal(kp_kernel_launch(rt, k, args, 4, NULL), KP_OK);
    args[3].struct_size = 200;
    assert_int_equal(kp_kernel_launch(rt, k, args, 4, NULL), KP_ERR_INVALID_ARG);
    assert_non_null(strstr(kp_last_error(rt), "argument 3 (\"y\"): struct_size 200 is not a "
                                              "kp_arg layout this library knows"));
    kp_prepared *p = NULL;
    assert_int_equal(kp_prepared_create(rt, k, args, 4, &p), KP_ERR_INVALID_ARG);
    args[3].struct_size = sizeof(kp_arg);
    assert_int_equal(kp_prepared_create(rt, k, args, 4, &p), KP_OK);
    kp_arg alpha = kp_arg_float("alpha", 3.0);
    alpha.struct_size = 1;
    assert_int_equal(kp_prepared_set(p, &alpha), KP_ERR_INVALID_ARG);
    assert_non_null(strstr(kp_last_error(rt), "\"alpha\"): struct_size 1"));
    kp_prepared_destroy(p);
    kp_buffer_destroy(rt, x);
    kp_buffer_destroy(rt, y);
    kp_runtime_destroy(rt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_public_struct_is_pinned),
        cmocka_unit_test(test_too_small_is_refused),
        cmocka_unit_test(test_only_the_callers_bytes_are_written),
        cmocka_unit_test(test_a_grown_structure_keeps_old_callers_working),
        cmocka_unit_test(test_input_structures),
        cmocka_unit_test(test_arg_struct_size),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
