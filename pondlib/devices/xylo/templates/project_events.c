## The events of source $j (count $m) through one projection stored as an event list (CSR by source):
## ${w}_ptr[n_pre + 1] row starts, ${w}_post[nnz] post indices, ${w}_w[nnz] delivered weights (each in the
## narrowest C type: codegen._storage_bytes); for each entry, $target[post] = sat16($target[post] + $m w).
/* $target[$n_post] += $m * (row $j of the event list ${w}_ptr / ${w}_post / ${w}_w) */
for (int32_t p = ${w}_ptr[$j]; p < ${w}_ptr[$j + 1]; ++p) {
    const int32_t i = ${w}_post[p];
    $target[i] = (int16_t)xy_sat16($target[i] + $m * ${w}_w[p]);
}
