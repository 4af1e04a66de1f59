# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0
#
# Count a suite's KTAP results (sourced by selftests/run; tested on the host
# by scripts/testbed-selftest --host).
#
#   collect_ktap LABEL GUEST:FILE [GUEST:FILE]
#
# Each FILE is one guest's KTAP output (its script.log), GUEST its name (a,
# b).  Every FILE must have exactly one plan 1..N and exactly one result for
# each case 1..N: a planned case without a result fails ("no result"), and a
# result outside the plan or a second result for a case is one more failure;
# so is a missing or second plan.
#
# With two FILEs (a two-guest suite: both guests run the same script, case
# by case in step), the plans must be the same (N and the name of each case)
# and each case is ONE result: failed if either side failed or gave no
# result; else skipped if either side skipped for a reason of its own (the
# case was not asserted on that side, so passing it would claim too much) or
# if both sides skipped; else passed.  A case that only one guest can assert
# is skipped in the other with a reason starting "one-sided:" (ktap.sh's
# only_in_guest and gtest@ROLE:BINARY): such a skip alone does not make the
# case skipped, and the merged case's skip reason leaves it out when the
# other guest gives one.
#
# Prints "  FAIL LABEL: ..." for each failure, followed by the diagnostic
# lines ("# ...") that each failing guest wrote for that case (the last
# COLLECT_DIAG_LINES of them, 40 unless set; so that a CI log that shows
# only this output still says why), "  SKIP LABEL: ..." for each skip, then
# "  LABEL: N passed, N failed, N skipped", and leaves the counts in
# COLLECT_PASS, COLLECT_FAIL and COLLECT_SKIP.

# The merge, in awk (mawk and gawk): one line per counted result,
# "pass|skip|fail<TAB>text", a failure followed by its guests' diagnostic
# lines as "diag<TAB>text".  Files are read with getline, so that an empty
# or missing one still counts.
_COLLECT_AWK='
function problem(text) { print "fail\t" text }

# the diagnostic lines seen since the last result, the last maxdiag of them
function diag_text(    i, t) {
	t = ""
	for (i = (nd > maxdiag ? nd - maxdiag : 0); i < nd; i++)
		t = t dl[i % maxdiag] "\n"
	return t
}

function parse(g, f,    line, rest, n, i, st, name, why, max, got, k) {
	plan[g] = -1
	max = 0
	nd = 0
	while ((got = getline line < f) > 0) {
		sub(/\r$/, "", line)
		if (line ~ /^[ \t]*#/) {
			dl[nd % maxdiag] = line
			nd++
			continue
		}
		if (line ~ /^1\.\.[0-9]+[ \t]*$/) {
			if (plan[g] >= 0)
				problem("guest " gn[g] ": a second plan (" line ")")
			else
				plan[g] = substr(line, 4) + 0
			continue
		}
		if (line !~ /^(not )?ok [0-9]+([ \t]|$)/)
			continue
		st = line ~ /^not / ? "fail" : "pass"
		rest = line
		sub(/^(not )?ok /, "", rest)
		n = rest + 0
		sub(/^[0-9]+[ \t]*/, "", rest)
		name = rest
		why = ""
		i = index(rest, " # ")
		if (i > 0) {
			name = substr(rest, 1, i - 1)
			why = substr(rest, i + 3)
			if (st == "pass" && why ~ /^SKIP([ \t]|$)/) {
				st = "skip"
				sub(/^SKIP[ \t]*/, "", why)
				if (why == "")
					why = "no reason given"
			}
		}
		if ((g, n) in res) {
			problem("guest " gn[g] ": a second result for case " n " (" line ")")
			continue
		}
		res[g, n] = st
		nm[g, n] = name
		rsn[g, n] = why
		if (st == "fail")
			diag[g, n] = diag_text()
		nd = 0
		if (n > max)
			max = n
	}
	if (got < 0)
		problem("guest " gn[g] ": cannot read " f)
	close(f)
	if (plan[g] < 0) {
		problem("guest " gn[g] ": no KTAP plan (1..N)")
		plan[g] = max
	}
	for (k = plan[g] + 1; k <= max; k++) {
		if ((g, k) in res) {
			problem("guest " gn[g] ": result outside the plan 1.." plan[g] ": " k " " nm[g, k])
			delete res[g, k]
		}
	}
	if ((g, 0) in res) {
		problem("guest " gn[g] ": result outside the plan 1.." plan[g] ": 0 " nm[g, 0])
		delete res[g, 0]
	}
}

# the reasons of the guests that skipped; "one-sided:" reasons only if all are
function skip_reason(k,    g, r, all, one) {
	all = ""
	one = ""
	for (g = 1; g <= ng; g++) {
		if (res[g, k] != "skip")
			continue
		r = rsn[g, k]
		if (ng > 1)
			r = "guest " gn[g] ": " r
		if (rsn[g, k] ~ /^one-sided:/)
			one = one (one == "" ? "" : "; ") r
		else
			all = all (all == "" ? "" : "; ") r
	}
	return all != "" ? all : one
}

BEGIN {
	ng = split(files, spec, "\n")
	for (g = 1; g <= ng; g++) {
		i = index(spec[g], ":")
		gn[g] = substr(spec[g], 1, i - 1)
		parse(g, substr(spec[g], i + 1))
	}
	n = 0
	for (g = 1; g <= ng; g++)
		if (plan[g] > n)
			n = plan[g]
	if (ng == 2 && plan[1] != plan[2])
		problem("the plans differ: guest " gn[1] " 1.." plan[1] ", guest " gn[2] " 1.." plan[2])
	for (k = 1; k <= n; k++) {
		name = ""
		bad = ""
		skips = 0
		real_skip = 0
		for (g = 1; g <= ng; g++) {
			if (!((g, k) in res)) {
				bad = bad (bad == "" ? "" : ", ") "no result from guest " gn[g]
				continue
			}
			if (name == "")
				name = nm[g, k]
			else if (nm[g, k] != name)
				bad = bad (bad == "" ? "" : ", ") "guest " gn[g] " calls it " nm[g, k]
			if (res[g, k] == "fail")
				bad = bad (bad == "" ? "" : ", ") "not ok" (ng > 1 ? " in guest " gn[g] : "")
			else if (res[g, k] == "skip") {
				skips++
				if (rsn[g, k] !~ /^one-sided:/)
					real_skip = 1
			}
		}
		if (name == "")
			name = "(unnamed)"
		if (bad != "") {
			print "fail\t" k " " name ": " bad
			for (g = 1; g <= ng; g++) {
				if (!((g, k) in diag))
					continue
				m = split(diag[g, k], dlines, "\n")
				for (i = 1; i < m; i++)
					print "diag\t" gn[g] "| " dlines[i]
			}
		}
		else if (skips == ng || real_skip)
			print "skip\t" k " " name " # SKIP " skip_reason(k)
		else
			print "pass\t" k " " name
	}
	print "end\t"
}'

collect_ktap() {
	local label=$1 kind text files ended=0
	shift
	files=$(printf '%s\n' "$@")
	COLLECT_PASS=0
	COLLECT_FAIL=0
	COLLECT_SKIP=0
	while IFS=$'\t' read -r kind text; do
		case $kind in
		end)
			ended=1
			;;
		pass)
			COLLECT_PASS=$((COLLECT_PASS + 1))
			;;
		skip)
			COLLECT_SKIP=$((COLLECT_SKIP + 1))
			echo "  SKIP $label: $text"
			;;
		diag)
			echo "    $text"
			;;
		*)
			COLLECT_FAIL=$((COLLECT_FAIL + 1))
			echo "  FAIL $label: $text"
			;;
		esac
	done < <(awk -v files="$files" -v maxdiag="${COLLECT_DIAG_LINES:-40}" "$_COLLECT_AWK" </dev/null)
	if [ "$ended" = 0 ]; then
		COLLECT_FAIL=$((COLLECT_FAIL + 1))
		echo "  FAIL $label: the KTAP collector itself failed"
	fi
	echo "  $label: $COLLECT_PASS passed, $COLLECT_FAIL failed, $COLLECT_SKIP skipped"
}
