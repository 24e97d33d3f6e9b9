## One node of the graph: a comment naming it, then its kernel.
/* node $index: $label */
$body
