// Java's HttpServer on a wildcard address, new InetSocketAddress(port): an
// AF_INET6 dual-stack socket on "::" unless java.net.preferIPv4Stack
// (test/integration/preload_dualstack.sh). Usage (single-file source):
// java HelloServer.java PORT BODY
import com.sun.net.httpserver.HttpServer;
import java.net.InetSocketAddress;
import java.util.concurrent.Executors;

public class HelloServer {
    public static void main(String[] args) throws Exception {
        byte[] body = (args[1] + "\n").getBytes();
        HttpServer s = HttpServer.create(new InetSocketAddress(Integer.parseInt(args[0])), 64);
        s.createContext("/", x -> {
            x.sendResponseHeaders(200, body.length);
            x.getResponseBody().write(body);
            x.close();
        });
        s.setExecutor(Executors.newFixedThreadPool(2));
        s.start();
        System.out.println("listening");
    }
}
