## One layer of the step in its own scope: $body is its C.
/* layer $i: $kind $label */
{
    $body
}
