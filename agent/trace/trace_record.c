#include "trace_record.h"

#include "tc_error.h"
#include "tc_validate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static Traincast__V1__Policy s_policy(const tc_trace_request_t *q)
{
    return q->cudnn_benchmark ? TRAINCAST__V1__POLICY__POLICY_EXHAUSTIVE
                              : TRAINCAST__V1__POLICY__POLICY_HEURISTIC;
}

void tc_trace_key(const Traincast__V1__TrainTrace *t, char *out, size_t size)
{
    const Traincast__V1__Device *d = t->device;
    snprintf(out, size, "%s|b%u|%s|%s|%s|%s|%s:%u|t%u", t->model_id, t->batch,
             tc_dtype_name(t->dtype), t->amp, t->optimizer, tc_policy_name(t->policy),
             d ? tc_device_kind_name(d->kind) : "?", d ? d->index : 0, d ? d->threads : 0);
}

void tc_trace_plan_key(const tc_trace_job_t *job, const char *model_id,
                       Traincast__V1__DeviceKind kind, uint32_t index, char *out, size_t size)
{
    const tc_trace_request_t *q = &job->req;
    Traincast__V1__TrainTrace t;
    Traincast__V1__Device d;
    traincast__v1__train_trace__init(&t);
    traincast__v1__device__init(&d);
    d.kind = kind;
    d.index = index;
    d.threads = kind == TRAINCAST__V1__DEVICE_KIND__DEVICE_KIND_CPU ? q->threads : 0;
    t.device = &d;
    t.model_id = (char *)model_id;
    t.batch = q->batch;
    tc_dtype_parse(q->dtype, &t.dtype);
    t.amp = (char *)q->amp;
    t.optimizer = (char *)q->optimizer;
    t.policy = s_policy(q);
    tc_trace_key(&t, out, size);
}

int tc_trace_record_emit(const tc_trace_record_t *rec, const char *agent_id,
                         int (*emit)(tc_envelope_t *env, void *arg), void *arg)
{
    const tc_trace_job_t *job = rec->job;
    const tc_trace_request_t *q = &job->req;
    const tc_trace_result_t *r = rec->result;
    Traincast__V1__TrainTrace t;
    Traincast__V1__Device dev;
    traincast__v1__train_trace__init(&t);
    tc_trace_device_to_proto(rec->device, &dev);
    t.device = &dev;
    t.framework = (char *)(r->info.framework[0] ? r->info.framework : "unknown");
    t.framework_version = (char *)r->info.framework_version;
    t.library_version = (char *)r->info.library_version;
    t.model_id = (char *)rec->model_id;
    t.batch = q->batch;
    t.input_size = q->input_size;
    int rc = tc_dtype_parse(q->dtype, &t.dtype);
    if (rc < 0)
        return rc;
    t.amp = (char *)q->amp;
    t.optimizer = (char *)q->optimizer;
    t.policy = s_policy(q);
    t.warmup = q->warmup;
    t.iters = q->iters;
    t.repeats = job->repeats;
    t.median_ms = r->median_ms;
    t.spread = r->spread;
    t.peak_memory_bytes = r->peak_memory_bytes;
    t.status = r->status;
    t.reason = (char *)r->reason;
    t.graph = (Traincast__V1__ModelGraph *)rec->graph;
    t.started_at_us = r->started_at_us;
    t.threads = rec->device->threads;
    t.runner = (char *)rec->runner;

    Traincast__V1__Iteration *its = calloc(r->n_samples + 1, sizeof *its);
    Traincast__V1__Iteration **it_ptrs = calloc(r->n_samples + 1, sizeof *it_ptrs);
    Traincast__V1__OpClassTime ops[TC_OPC_COUNT], *op_ptrs[TC_OPC_COUNT];
    Traincast__V1__Setting sets[TC_TRACE_MAX_SETTINGS], *set_ptrs[TC_TRACE_MAX_SETTINGS];
    for (size_t i = 0; i < r->info.n_settings && i < TC_TRACE_MAX_SETTINGS; i++) {
        traincast__v1__setting__init(&sets[i]);
        sets[i].name = (char *)r->info.settings[i].name;
        sets[i].value = (char *)r->info.settings[i].value;
        set_ptrs[i] = &sets[i];
    }
    t.settings = set_ptrs;
    t.n_settings = r->info.n_settings;
    t.sm_clock_mhz = r->info.sm_clock_mhz;
    t.power_w = r->info.power_w;
    if (r->info.energy_source[0] && r->info.energy_j >= 0) {
        t.energy_j = r->info.energy_j;
        t.energy_source = (char *)r->info.energy_source;
    }
    t.energy_absent = (char *)r->info.energy_absent;
    Traincast__V1__Load load = TRAINCAST__V1__LOAD__INIT;
    if (r->load.known) {
        load.others_pct = r->load.others_pct;
        load.steal_pct = r->load.steal_pct;
        load.threshold_pct = job->quiet.threshold_pct;
        load.remeasured = r->remeasured;
        load.disturbed = r->disturbed;
        t.load = &load;
    }
    if (!its || !it_ptrs) {
        rc = tc_fail(TC_ENOMEM, "out of memory for %zu iterations", r->n_samples);
        goto done;
    }
    for (size_t i = 0; i < r->n_samples; i++) {
        traincast__v1__iteration__init(&its[i]);
        its[i].repeat = r->samples[i].repeat;
        its[i].index = r->samples[i].it.index;
        its[i].ms = r->samples[i].it.ms;
        its[i].at_us = r->samples[i].it.at_us;
        its[i].warmup = r->samples[i].it.warmup;
        it_ptrs[i] = &its[i];
    }
    t.iterations = it_ptrs;
    t.n_iterations = r->n_samples;
    if (r->status == TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OK && r->info.have_op_times) {
        for (int c = 0; c < TC_OPC_COUNT; c++) {
            if (!r->info.op_present[c])
                continue;
            traincast__v1__op_class_time__init(&ops[t.n_op_times]);
            ops[t.n_op_times].op_class = (char *)tc_op_class_name((tc_op_class_t)c);
            ops[t.n_op_times].ms = r->info.op_ms[c];
            op_ptrs[t.n_op_times] = &ops[t.n_op_times];
            t.n_op_times++;
        }
        t.op_times = op_ptrs;
    }

    tc_envelope_t env;
    char id[TC_MSGID_LEN + 1];
    traincast__v1__envelope__init(&env);
    env.body_case = TRAINCAST__V1__ENVELOPE__BODY_TRAIN_TRACE;
    env.train_trace = &t;
    tc_envelope_stamp(&env, agent_id, id);
    if ((rc = tc_validate_envelope(&env)) < 0) {
        tc_err_context(rc, "the trace of %s at batch %u is not valid (a bug; please report it)",
                       rec->model_id, q->batch);
        goto done;
    }
    rc = emit(&env, arg);
done:
    free(its);
    free(it_ptrs);
    return rc;
}
