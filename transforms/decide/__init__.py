"""Stage `decide`: ApplyVerdict: rules over metric values -> PASS / WARN / FAIL / ERROR."""
