"""Running a few layers through a Program, shared by the layer tests of this folder."""
import minifluid as fluid


def run(build, feed=None):
    """Build with ``build()`` (returns the Variables to fetch) in fresh programs, run once, return numpy values."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        outs = build()
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    return outs, exe.run(main, feed=feed or {}, fetch_list=list(outs), scope=scope)
